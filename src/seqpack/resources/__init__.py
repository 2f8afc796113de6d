"""Package data: the small example SFT dataset (see ``seqpack.data.samples._example_data``)."""
