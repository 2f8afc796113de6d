"""Which names a rule may read: Bridge 0.6.2's config keys (``_bridge_fields`` and the typed view), and the
facts the doctor knows beside the config.

The loader asks it for "did you mean" (:data:`KNOWN_FIELDS`); rule registration asks it whether a rule's
fields and fix keys exist (:func:`field_problem`), so a misspelled key in a new rule fails at import, not
silently never matching::

    model.context_parallel_size                   a field of model          -> known
    dataset.offline_packing_specs.pad_seq_to_mult  a field of the specs     -> known
    dataset.dataset_kwargs.anything               dataset_kwargs is free    -> known
    model.context_paralel_size                    not a field of model      -> a problem
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from bridgepack._bridge_keys import LEGACY_IN_BATCH, LEGACY_SPECS, SPECS
from bridgepack.doctor import _bridge_fields as bf
from bridgepack.doctor._view import SECTION_CLASSES

#: Known field names per section (Bridge's lists); a section not here is known by its view's fields only.
KNOWN_FIELDS: Mapping[str, frozenset[str]] = {
    "model": bf.MODEL_FIELDS,
    "ddp": bf.DDP_FIELDS,
    "optimizer": bf.OPTIMIZER_FIELDS,
    "scheduler": bf.SCHEDULER_FIELDS,
    "dataset": bf.DATASET_FIELDS,
    SPECS: bf.PACKED_SPECS_FIELDS,
}
#: Mappings whose keys are the user's own (``dataset_kwargs`` is handed to the dataset class as it is).
FREE_MAPPINGS = frozenset({"dataset.dataset_kwargs"})
#: What a rule may read besides the config: the command's context options, the packed data, and the
#: loader rules' stand-ins for whichever section or field the input names.
CONTEXT_FACTS = frozenset(
    {"world_size", "data_parallel_size", "kernel_chunk", "packed data", "<section>", "<field>"}
)
#: ``metadata.KEY``: a value recorded in the packed data's ``{N}_metadata.jsonl``.
METADATA_PREFIX = "metadata."
#: The <= v0.5 names the loader still reads (bridge-format §1).
LEGACY_KEYS = frozenset({LEGACY_SPECS, LEGACY_IN_BATCH})


def section_fields(path: str) -> frozenset[str]:
    """The known field names of a section (``model``) or a nested one (``dataset.offline_packing_specs``)."""
    view = SECTION_CLASSES.get(path)
    names = frozenset(f.name for f in fields(view)) - {"target", "kind"} if view is not None else frozenset()
    return KNOWN_FIELDS.get(path, frozenset()) | names


def field_problem(name: str, *, facts: bool = True) -> str | None:
    """What is wrong with ``name`` as a field a rule reads (or, ``facts=False``, a key its fix sets), or
    ``None`` when it is a Bridge config key (or a fact the doctor knows)."""
    if facts and (name in CONTEXT_FACTS or name.startswith(METADATA_PREFIX)):
        return None
    if name in LEGACY_KEYS:
        return None
    section, _, rest = name.partition(".")
    if section not in bf.CONTAINER_SECTIONS:
        return f"{section!r} is not a ConfigContainer section"
    path = section
    for part in rest.split(".") if rest else ():
        if path in FREE_MAPPINGS:
            return None
        known = section_fields(path)
        if not known:  # a section bridgepack has no field list for (logger, dist, ...): any name
            return None
        if part not in known:
            return f"{part!r} is not a known field of {path} (add it to _bridge_fields.py if Bridge has it)"
        path = f"{path}.{part}"
    return None
