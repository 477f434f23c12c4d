"""``numgrad.optim``: optimizers with PyTorch's names, options and update rules."""
from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam"]
