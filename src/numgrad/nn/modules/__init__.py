"""The module classes, one file per kind, as in PyTorch."""
from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleList, Sequential
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss, SmoothL1Loss
from .module import Module

__all__ = [
    "Module", "Linear", "Identity", "Sequential", "ModuleList", "Flatten", "ReLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "SmoothL1Loss",
    "BCEWithLogitsLoss",
]
