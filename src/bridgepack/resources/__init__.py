"""Package data: the small example SFT dataset (see ``bridgepack.data.samples._example_data``)."""
