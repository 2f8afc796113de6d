"""The rule table: every packing and long-context rule, one small function each (bridge-format §7, §8).

A rule is defined, whole, in the module of its group (:data:`~bridgepack.doctor._registry.GROUPS`):
``_rules_packing`` (SP001-SP010), ``_rules_parallel`` (SP011-SP025), ``_rules_families`` (SP026-SP031),
``_rules_data`` (SP032-SP099), ``_rules_input`` (SP100-SP199). Its :func:`~bridgepack.doctor._registry.rule`
call holds its severity, fields, upstream behaviour, fix keys, an example, and its messages in English and
Chinese; registration checks them at import. A rule Bridge enforces is an error; advice is a warning or
info. The CLI, the Python API, the rule catalog (``bridgepack doctor --list-rules``) and ``docs/doctor.md``
all read :data:`RULES`.

Adding a rule: write it in its group's module with the next free id (and its Bridge key in
``bridgepack._bridge_keys`` when new); the docs table is generated (``rules_markdown``).
"""

from __future__ import annotations

from bridgepack.doctor import _rules_data, _rules_families, _rules_input, _rules_packing, _rules_parallel
from bridgepack.doctor._findings import Rule
from bridgepack.doctor._registry import REGISTERED

#: The modules that define rules, imported here so that every rule is registered before RULES is read.
RULE_MODULES = (_rules_packing, _rules_parallel, _rules_families, _rules_data, _rules_input)

#: Every rule, in id order.
RULES: tuple[Rule, ...] = tuple(sorted(REGISTERED, key=lambda r: r.id))

#: The CUDA-graph reading the known-defect triggers share with SP008/SP009.
_full_iteration_graph = _rules_packing.full_iteration_graph
