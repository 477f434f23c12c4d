"""The module classes, one file per kind, as in PyTorch."""
from .activation import (
    ELU, GELU, Hardtanh, LeakyReLU, LogSoftmax, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softplus,
    Tanh,
)
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .flatten import Unflatten  # noqa: F401
from .linear import Identity, Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss, SmoothL1Loss
from .loss import BCELoss, HuberLoss, KLDivLoss, L1Loss  # noqa: F401
from .module import Module
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = [
    "Module", "Linear", "Identity", "Sequential", "ModuleList", "Flatten", "ReLU", "Tanh",
    "Sigmoid", "Softmax", "LogSoftmax", "MSELoss", "CrossEntropyLoss", "NLLLoss", "SmoothL1Loss",
    "BCEWithLogitsLoss", "LeakyReLU", "ELU", "SiLU", "Softplus", "Hardtanh", "ReLU6", "GELU",
    "Dropout", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
]
__all__ += ["Conv1d", "Conv2d"]
from .conv import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402

__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
from .batchnorm import BatchNorm3d  # noqa: E402

__all__ += ["BatchNorm3d"]
from .upsampling import (  # noqa: E402
    PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d,
)

__all__ += ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
            "PixelUnshuffle"]
from .pooling import AdaptiveAvgPool3d, AvgPool3d, MaxPool3d  # noqa: E402

__all__ += ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d"]
from .conv import Fold, Unfold  # noqa: E402

__all__ += ["Fold", "Unfold"]
__all__ += ["L1Loss", "HuberLoss", "BCELoss", "KLDivLoss"]
from .activation import (  # noqa: E402
    CELU, SELU, Hardsigmoid, Hardswish, LogSigmoid, Mish, Softsign, Tanhshrink,
)

__all__ += ["Mish", "Hardswish", "Hardsigmoid", "SELU", "CELU", "LogSigmoid", "Softsign",
            "Tanhshrink"]
from .padding import (  # noqa: E402
    CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
    ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d,
)
from .padding import (  # noqa: E402
    CircularPad3d, ConstantPad3d, ReflectionPad3d, ReplicationPad3d, ZeroPad3d,
)
from .pooling import (  # noqa: E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
    AvgPool2d, MaxPool1d, MaxPool2d,
)

__all__ += ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
            "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "ZeroPad1d",
            "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
            "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d"]
__all__ += ["ConstantPad3d", "ZeroPad3d", "CircularPad3d", "ReflectionPad3d", "ReplicationPad3d"]
__all__ += ["Unflatten"]
from .activation import (  # noqa: E402
    GLU, PReLU, RReLU, Hardshrink, Softmax2d, Softmin, Softshrink, Threshold,
)
from .bilinear import Bilinear  # noqa: E402
from .container import ModuleDict, ParameterDict, ParameterList  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d  # noqa: E402
from .loss import (  # noqa: E402
    CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,
    MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
)
from .normalization import (  # noqa: E402
    GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LocalResponseNorm, RMSNorm,
)

__all__ += ["PReLU", "GLU", "Softmin", "Softmax2d", "Softshrink", "Hardshrink", "Threshold",
            "RReLU", "Bilinear", "ModuleDict", "ParameterList", "ParameterDict",
            "CosineSimilarity", "PairwiseDistance", "Dropout1d", "Dropout2d", "Dropout3d",
            "AlphaDropout", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
            "TripletMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss", "SoftMarginLoss",
            "MultiLabelSoftMarginLoss", "MultiMarginLoss", "GroupNorm", "InstanceNorm1d",
            "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "RMSNorm"]
from .attention import MultiheadAttention  # noqa: E402
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
from .transformer import (  # noqa: E402
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
            "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
            "TransformerEncoderLayer", "TransformerDecoderLayer"]
from .dropout import FeatureAlphaDropout  # noqa: E402
from .loss import CTCLoss, MultiLabelMarginLoss, TripletMarginWithDistanceLoss  # noqa: E402
from .pooling import (  # noqa: E402
    AdaptiveMaxPool3d, FractionalMaxPool2d, FractionalMaxPool3d, MaxUnpool1d, MaxUnpool2d,
    MaxUnpool3d,
)
from .sparse import EmbeddingBag  # noqa: E402
from .upsampling import ChannelShuffle  # noqa: E402

__all__ += ["FeatureAlphaDropout", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
            "AdaptiveMaxPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "MaxUnpool1d",
            "MaxUnpool2d", "MaxUnpool3d", "EmbeddingBag", "ChannelShuffle", "CTCLoss"]
