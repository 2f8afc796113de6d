"""Samples in, packs out, in four sub-packages stacked in this order (docs/architecture.md):

* :mod:`seqpack.data.format`   -- the on-disk format of a pack set (metadata record, run ids, names, schema);
* :mod:`seqpack.data.samples`  -- reading samples (readers, the JSON scanner, examples, workers, text);
* :mod:`seqpack.data.pipeline` -- the pack pipeline (options, shaping, scratch, lock, passes, writer);
* :mod:`seqpack.data.packed`   -- reading packed data (Parquet and legacy readers, source, scan, stats,
  inspection, decoding).

This package has no names of its own: import each from its sub-package.
"""
