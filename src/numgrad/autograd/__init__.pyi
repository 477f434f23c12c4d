# The names of numgrad.autograd as type checkers see them. At run time __init__.py imports the
# modules made of the tensor and the ops (backward/grad, Function, Variable, forward AD, the
# checks, the engine, graph) on first use, so that tensor.py's import of autograd reaches nothing
# above it; a stub declares them without an import that runs.
from . import engine as engine
from . import entry as entry
from . import forward_ad as forward_ad
from . import function as function
from . import functional as functional
from . import graph as graph
from . import profiler as profiler
from . import variable as variable
from .anomaly_mode import detect_anomaly as detect_anomaly
from .anomaly_mode import is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled
from .anomaly_mode import is_anomaly_enabled as is_anomaly_enabled
from .anomaly_mode import set_detect_anomaly as set_detect_anomaly
from .entry import _is_checkpoint_valid as _is_checkpoint_valid
from .entry import backward as backward
from .entry import grad as grad
from .function import Function as Function
from .grad_mode import enable_grad as enable_grad
from .grad_mode import inference_mode as inference_mode
from .grad_mode import is_grad_enabled as is_grad_enabled
from .grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from .grad_mode import no_grad as no_grad
from .grad_mode import set_grad_enabled as set_grad_enabled
from .gradcheck import GradcheckError as GradcheckError
from .gradcheck import gradcheck as gradcheck
from .gradcheck import gradgradcheck as gradgradcheck
from .node import AccumulateGrad as AccumulateGrad
from .node import Node as Node
from .variable import Variable as Variable

_LAZY: dict[str, str | None]
__all__: list[str]

def _load() -> None: ...
