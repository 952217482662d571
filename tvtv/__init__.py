"""tvtv: translation validation for TVM Relax passes.

    tvtv.verify(before, after)        -> Report   (refinement of `after` w.r.t. `before`)
    tvtv.check_pass("FuseOps", mod)   -> Report   (run the pass, then verify)
    tvtv.registered_passes()          -> list of pass names
"""
from tvtv.api import check_pass, registered_passes, verify
from tvtv.report import Report, Result

__all__ = ["verify", "check_pass", "registered_passes", "Report", "Result"]
__version__ = "0.1.0"
