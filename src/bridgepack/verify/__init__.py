"""Cross-checks against Megatron-Bridge itself (installed, or loaded from its wheels): the same samples
packed by both, the same rows collated by both, doctor's rule cases validated by Bridge's own
``ConfigContainer.validate`` (``bridgepack verify --bridge``).
"""

from bridgepack.verify._verify import PartResult, VerifyOptions, VerifyReport, verify_bridge

__all__ = ["PartResult", "VerifyOptions", "VerifyReport", "verify_bridge"]
