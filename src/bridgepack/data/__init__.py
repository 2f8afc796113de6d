"""Samples in, packs out, in four sub-packages stacked in this order (docs/architecture.md):

* :mod:`bridgepack.data.packset`   -- the on-disk format of a pack set (metadata record, run ids, names,
  schema);
* :mod:`bridgepack.data.samples`  -- reading samples (readers, the JSON scanner, examples, workers, text);
* :mod:`bridgepack.data.pipeline` -- the pack pipeline (options, shaping, scratch, lock, passes, writer);
* :mod:`bridgepack.data.packed`   -- reading packed data (Parquet and legacy readers, source, scan, stats,
  inspection, decoding).

This package has no names of its own: import each from its sub-package.
"""
