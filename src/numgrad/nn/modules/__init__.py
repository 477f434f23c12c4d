"""The module classes, one file per kind, as in PyTorch."""
from .activation import (
    CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
    LogSoftmax, Mish, PReLU, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmax2d,
    Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold,
)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import (
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Fold, Unfold,
)
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (
    BCELoss, BCEWithLogitsLoss, CTCLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
    HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss,
    SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
)
from .module import Module
from .normalization import (
    GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm, LocalResponseNorm,
    RMSNorm,
)
from .sparse import Embedding, EmbeddingBag
from .upsampling import (
    ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
    AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, FractionalMaxPool2d,
    FractionalMaxPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
)
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .bilinear import Bilinear
from .distance import CosineSimilarity, PairwiseDistance
from .attention import MultiheadAttention
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "Module", "Linear", "Identity", "Sequential", "ModuleList", "Flatten", "ReLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss",
    "SmoothL1Loss", "BCEWithLogitsLoss", "LeakyReLU", "ELU", "SiLU", "Softplus", "Hardtanh",
    "ReLU6", "GELU", "Dropout", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "BatchNorm3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
    "PixelUnshuffle", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "Fold", "Unfold", "L1Loss",
    "HuberLoss", "BCELoss", "KLDivLoss", "Mish", "Hardswish", "Hardsigmoid", "SELU", "CELU",
    "LogSigmoid", "Softsign", "Tanhshrink", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d",
    "ConstantPad3d", "ZeroPad3d", "CircularPad3d", "ReflectionPad3d", "ReplicationPad3d",
    "Unflatten", "PReLU", "GLU", "Softmin", "Softmax2d", "Softshrink", "Hardshrink",
    "Threshold", "RReLU", "Bilinear", "ModuleDict", "ParameterList", "ParameterDict",
    "CosineSimilarity", "PairwiseDistance", "Dropout1d", "Dropout2d", "Dropout3d",
    "AlphaDropout", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
    "TripletMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "SoftMarginLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "RMSNorm", "RNNBase", "RNN",
    "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention",
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "FeatureAlphaDropout", "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss", "AdaptiveMaxPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "EmbeddingBag",
    "ChannelShuffle", "CTCLoss",
]
