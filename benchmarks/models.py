"""Training steps of the models people train (issue 29), each written once for a module ``m``
that is ``numgrad`` or ``torch``: ``make(m)`` builds the model, its optimizer and a batch from
fixed seeds and returns a function that runs one training step (forward, loss, backward, update).

- ``cnn``: the MNIST-example CNN (conv 1→32→64 3×3, max-pool, dropout, fc 9216→128→10), batch
  64, Adam;
- ``lstm_lm``: a word-level language model (embedding 10k×200, 2-layer LSTM of 200, sequence
  35, batch 20, decoder tied to the embedding), SGD with gradient clipping;
- ``tiny_gpt``: a character GPT (4 blocks, 4 heads, width 128, context 64, vocabulary 65, batch
  16; pre-norm blocks of causal attention and a GELU MLP), AdamW;
- ``resnet_block``: a residual block with BatchNorm (conv 64→64 3×3 twice, batch 16, 32×32),
  SGD with momentum;
- ``conv_transpose``: a decoder's upsampling layer (conv_transpose2d 64→32, 4×4, stride 2, of
  a 16×16 batch of 16), SGD;
- ``small_cnn``, ``char_lstm``, ``small_transformer``: the small models a new user writes first
  (issue 29's "Why": their CNN of 8 and 16 channels, character LSTM and tiny Transformer), where
  the fixed cost of each op and each product counts more than the kernels' rates.

Used by ``compare.py --models`` (eager and compiled beside PyTorch), ``profile_step.py``
(where the time of a step goes, op by op) and the asv suite ``bench_models.py``.
"""
from __future__ import annotations

import numpy as np


def _data(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _labels(high, shape, seed=1):
    return np.random.default_rng(seed).integers(0, high, shape)


def _training_step(opt, loss_of):
    """A training step: the gradients zeroed, the loss (``loss_of()``) computed and
    backpropagated, ``opt`` stepped; returns the loss."""
    def step():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss

    return step


def cnn(m, batch=64):
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.drop1, self.drop2 = nn.Dropout(0.25), nn.Dropout(0.5)
            self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
            x = self.drop1(x).flatten(1)
            x = self.drop2(F.relu(self.fc1(x)))
            return F.log_softmax(self.fc2(x), dim=1)

    model = Net()
    opt = m.optim.Adam(model.parameters(), lr=1e-3)
    x, y = m.tensor(_data((batch, 1, 28, 28))), m.tensor(_labels(10, batch))

    return _training_step(opt, lambda: F.nll_loss(model(x), y))


def lstm_lm(m, vocab=10_000, width=200, seq=35, batch=20):
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, width)
            self.rnn = nn.LSTM(width, width, 2, dropout=0.2)
            self.decoder = nn.Linear(width, vocab)
            self.decoder.weight = self.encoder.weight  # (tied)
            self.drop = nn.Dropout(0.2)

        def forward(self, tokens):
            out, _ = self.rnn(self.drop(self.encoder(tokens)))
            return self.decoder(self.drop(out)).view(-1, vocab)

    model = LanguageModel()
    opt = m.optim.SGD(model.parameters(), lr=20.0)
    tokens = m.tensor(_labels(vocab, (seq, batch)))
    target = m.tensor(_labels(vocab, (seq * batch,), seed=2))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), target)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        return loss

    return step


def tiny_gpt(m, vocab=65, width=128, heads=4, layers=4, block=64, batch=16):
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width), nn.Dropout(0.1))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

        def forward(self, idx):
            x = self.tokens(idx) + self.positions(m.arange(idx.shape[1]))
            return self.head(self.ln(self.blocks(x)))

    model = GPT()
    opt = m.optim.AdamW(model.parameters(), lr=3e-4)
    idx = m.tensor(_labels(vocab, (batch, block)))
    target = m.tensor(_labels(vocab, (batch, block), seed=2))

    return _training_step(
        opt, lambda: F.cross_entropy(model(idx).view(-1, vocab), target.view(-1)))


def resnet_block(m, channels=64, batch=16, size=32):
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1, self.bn2 = nn.BatchNorm2d(channels), nn.BatchNorm2d(channels)

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            return F.relu(x + self.bn2(self.conv2(y)))

    model = Residual()
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = m.tensor(_data((batch, channels, size, size)))

    return _training_step(opt, lambda: model(x).square().mean())


def conv_transpose(m, batch=16, size=16):
    nn = m.nn
    m.manual_seed(0)
    layer = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
    opt = m.optim.SGD(layer.parameters(), lr=0.01)
    x = m.tensor(_data((batch, 64, size, size)))

    return _training_step(opt, lambda: layer(x).square().mean())


def small_cnn(m, batch=64):
    """A new user's first CNN: two padded 3x3 convolutions of 8 and 16 channels, each with a
    ReLU and a 2x2 max-pool, one linear layer; cross-entropy, Adam."""
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    opt = m.optim.Adam(model.parameters(), lr=1e-3)
    x, y = m.tensor(_data((batch, 1, 28, 28))), m.tensor(_labels(10, batch))

    return _training_step(opt, lambda: F.cross_entropy(model(x), y))


def char_lstm(m, vocab=65, width=128, seq=64, batch=32):
    """A character-level LSTM: embedding, one ``batch_first`` LSTM layer of 128, a linear head
    over 65 characters; cross-entropy over every position, Adam."""
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)

    class CharModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.lstm = nn.LSTM(width, width, batch_first=True)
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens):
            return self.head(self.lstm(self.embed(tokens))[0])

    model = CharModel()
    opt = m.optim.Adam(model.parameters(), lr=2e-3)
    tokens = m.tensor(_labels(vocab, (batch, seq)))
    target = m.tensor(_labels(vocab, (batch, seq), seed=2))

    return _training_step(
        opt, lambda: F.cross_entropy(model(tokens).reshape(-1, vocab), target.reshape(-1)))


def small_transformer(m, vocab=65, width=64, heads=4, layers=2, block=32, batch=16):
    """A small Transformer built from ``nn.TransformerEncoderLayer`` (width 64, 4 heads,
    feed-forward 256, no dropout, ``batch_first``), two layers, a learned position table and a
    linear head; cross-entropy, AdamW."""
    nn, F = m.nn, m.nn.functional
    m.manual_seed(0)
    layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.positions = nn.Parameter(m.zeros(block, width))
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens) + self.positions))

    model = Encoder()
    opt = m.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = m.tensor(_labels(vocab, (batch, block)))
    target = m.tensor(_labels(vocab, (batch, block), seed=2))

    return _training_step(
        opt, lambda: F.cross_entropy(model(tokens).reshape(-1, vocab), target.reshape(-1)))


MODELS = {
    "MNIST-example CNN, batch 64, Adam": cnn,
    "word-LM, 2-layer LSTM 200, seq 35 x 20, SGD + clip": lstm_lm,
    "tiny GPT, 4 x 4 heads, d 128, block 64 x 16, AdamW": tiny_gpt,
    "ResNet block, BatchNorm, 64 ch 32x32 x 16, SGD": resnet_block,
    "conv_transpose2d 64->32 4x4 s2, 16x16 x 16, SGD": conv_transpose,
    "small CNN 1->8->16 ch, 28x28 x 64, Adam": small_cnn,
    "char-LSTM 128, seq 64 x 32, Adam": char_lstm,
    "small Transformer, 2 x nn.TransformerEncoderLayer d 64, AdamW": small_transformer,
}
