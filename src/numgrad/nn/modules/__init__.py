"""The module classes, one file per kind, as in PyTorch."""
from .activation import (
    ELU, GELU, Hardtanh, LeakyReLU, LogSoftmax, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softplus,
    Tanh,
)
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleList, Sequential
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss, SmoothL1Loss
from .module import Module
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = [
    "Module", "Linear", "Identity", "Sequential", "ModuleList", "Flatten", "ReLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "SmoothL1Loss",
    "BCEWithLogitsLoss", "LeakyReLU", "ELU", "SiLU", "Softplus", "Hardtanh", "ReLU6", "GELU",
    "Dropout", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
]
