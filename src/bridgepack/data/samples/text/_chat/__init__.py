"""Chat records: the chat template rendered and tokenized, and the assistant turns found as Bridge 0.6.2
finds them (docs/bridge-format.md §13). Private to :mod:`bridgepack.data.samples.text`."""
