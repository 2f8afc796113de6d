"""Package data: the small example SFT dataset (see ``seqpack.data._example_data``)."""
