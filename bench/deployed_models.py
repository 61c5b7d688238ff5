"""The deployed-architecture bench models: the layers that shipped models are made of, built in
PyTorch (torchvision's own definitions where it has them), with fixed-seed random weights, and
exported by torch.onnx at each model's deployment input size. make_models.py registers them as the
`deployed` group; `python3 bench/run_bench.py --models deployed` times them against onnxruntime.

Nothing here is a trained network: the weights are torch's default initialization under a fixed
seed, with BatchNorm statistics set to plausible non-trivial values so that folding them is tested.
torch and torchvision are imported only when a model is made (pip install torch torchvision).
"""
import io

import numpy as np

OPSET = 17


def _torch():
    import torch  # noqa: F401  (imported here: the rest of the bench does not need torch)
    return torch


def _randomize_batchnorm(model, seed):
    """Non-trivial running statistics and affine parameters, so BN folding is exercised."""
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)
    return model


def _export(model, shape, seed):
    """torch.onnx's export of `model` (eval mode, BN randomized) at input `shape`, as a ModelProto."""
    import onnx
    torch = _torch()
    model = _randomize_batchnorm(model.eval(), seed)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    buf = io.BytesIO()
    # nn.MultiheadAttention's inference fast path is one fused aten op that has no ONNX form; the
    # plain path exports as MatMul, Softmax and friends, as deployed ViT models are.
    torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad():
        torch.onnx.export(model, (x,), buf, opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True, dynamo=False)
    return onnx.load_from_string(buf.getvalue())


# ---- YOLOv8n-style detector: Conv-BN-SiLU, C2f, SPPF, upsample + concat, a decoupled head ----------

def _yolo_modules():
    nn = _torch().nn
    torch = _torch()

    class ConvBnSiLU(nn.Module):
        def __init__(self, cin, cout, k=1, s=1):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
            self.bn = nn.BatchNorm2d(cout)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut):
            super().__init__()
            self.cv1, self.cv2, self.add = ConvBnSiLU(c, c, 3), ConvBnSiLU(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C2f(nn.Module):  # split the 1x1 conv's output, run n bottlenecks on one half, concat all
        def __init__(self, cin, cout, n, shortcut):
            super().__init__()
            self.c = cout // 2
            self.cv1 = ConvBnSiLU(cin, 2 * self.c)
            self.cv2 = ConvBnSiLU((2 + n) * self.c, cout)
            self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

        def forward(self, x):
            y = list(self.cv1(x).split((self.c, self.c), 1))
            for m in self.m:
                y.append(m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.cv1, self.cv2 = ConvBnSiLU(cin, cin // 2), ConvBnSiLU(cin * 2, cout)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class YoloV8n(nn.Module):  # width 0.25, depth 0.33: channels 16..256, 80 classes, reg_max 16
        def __init__(self, nc=80):
            super().__init__()
            c = [16, 32, 64, 128, 256]
            self.stem = nn.Sequential(ConvBnSiLU(3, c[0], 3, 2), ConvBnSiLU(c[0], c[1], 3, 2), C2f(c[1], c[1], 1, True))
            self.p3 = nn.Sequential(ConvBnSiLU(c[1], c[2], 3, 2), C2f(c[2], c[2], 2, True))
            self.p4 = nn.Sequential(ConvBnSiLU(c[2], c[3], 3, 2), C2f(c[3], c[3], 2, True))
            self.p5 = nn.Sequential(ConvBnSiLU(c[3], c[4], 3, 2), C2f(c[4], c[4], 1, True), SPPF(c[4], c[4]))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.h4 = C2f(c[4] + c[3], c[3], 1, False)
            self.h3 = C2f(c[3] + c[2], c[2], 1, False)
            self.d3 = ConvBnSiLU(c[2], c[2], 3, 2)
            self.n4 = C2f(c[2] + c[3], c[3], 1, False)
            self.d4 = ConvBnSiLU(c[3], c[3], 3, 2)
            self.n5 = C2f(c[3] + c[4], c[4], 1, False)
            box, cls = 64, max(c[2], nc)
            self.box = nn.ModuleList(nn.Sequential(ConvBnSiLU(ci, box, 3), ConvBnSiLU(box, box, 3),
                                                   nn.Conv2d(box, 64, 1)) for ci in (c[2], c[3], c[4]))
            self.cls = nn.ModuleList(nn.Sequential(ConvBnSiLU(ci, cls, 3), ConvBnSiLU(cls, cls, 3),
                                                   nn.Conv2d(cls, nc, 1)) for ci in (c[2], c[3], c[4]))

        def forward(self, x):
            x3 = self.p3(self.stem(x))
            x4 = self.p4(x3)
            x5 = self.p5(x4)
            h4 = self.h4(torch.cat([self.up(x5), x4], 1))
            o3 = self.h3(torch.cat([self.up(h4), x3], 1))
            o4 = self.n4(torch.cat([self.d3(o3), h4], 1))
            o5 = self.n5(torch.cat([self.d4(o4), x5], 1))
            outs = [torch.cat([b(o), c(o)], 1).flatten(2) for o, b, c in zip((o3, o4, o5), self.box, self.cls)]
            return torch.cat(outs, 2).sigmoid()

    return YoloV8n


def make_yolov8n(size):
    return lambda: _export(_yolo_modules()(), (1, 3, size, size), seed=11)


# ---- torchvision's own architectures ------------------------------------------------------------

def _torchvision(name, shape, seed, **kwargs):
    def make():
        import torchvision
        _torch().manual_seed(seed)
        return _export(getattr(torchvision.models, name)(weights=None, **kwargs), shape, seed)
    return make


def make_vit_small():
    """DeiT-S's shape (ViT, patch 16, 12 layers, 6 heads, width 384) in torchvision's ViT."""
    import torchvision
    _torch().manual_seed(14)
    vit = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=6,
                                               hidden_dim=384, mlp_dim=1536)
    return _export(vit, (1, 3, 224, 224), seed=14)


def make_shufflenet_hardswish():
    """ShuffleNetV2 1.0x (channel shuffle through Reshape + Transpose, depthwise 3x3) with HardSwish
    for ReLU, as PP-PicoDet's ESNet/LCNet backbones use it."""
    import torchvision
    torch = _torch()
    torch.manual_seed(15)
    net = torchvision.models.shufflenet_v2_x1_0(weights=None)

    def swap(module):
        for name, child in module.named_children():
            if isinstance(child, torch.nn.ReLU):
                setattr(module, name, torch.nn.Hardswish())
            else:
                swap(child)
    swap(net)
    return _export(net, (1, 3, 320, 320), seed=15)


# ---- encoders: BERT-base-shaped, Whisper-tiny-shaped ----------------------------------------------

def _encoder_layer(d, heads, ffn):
    """A post-norm (BERT) / pre-norm (Whisper) transformer layer written out, as exporters see them:
    Linear q/k/v, scaled scores, Softmax, GELU (Erf at this opset), LayerNorm."""
    torch = _torch()
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self, pre_norm):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.act, self.pre_norm, self.h = nn.GELU(), pre_norm, heads

        def attention(self, x):
            b, t, _ = x.shape
            split = lambda y: y.view(b, t, self.h, d // self.h).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            s = torch.softmax(q @ k.transpose(-1, -2) * (d // self.h) ** -0.5, dim=-1)
            return self.o((s @ v).transpose(1, 2).reshape(b, t, d))

        def forward(self, x):
            if self.pre_norm:
                x = x + self.attention(self.ln1(x))
                return x + self.fc2(self.act(self.fc1(self.ln2(x))))
            x = self.ln1(x + self.attention(x))
            return self.ln2(x + self.fc2(self.act(self.fc1(x))))

    return Layer


def make_bert_base():
    """BERT-base's encoder (12 layers, width 768, 12 heads, FFN 3072) on embeddings of sequence 128."""
    torch = _torch()
    torch.manual_seed(16)
    layer = _encoder_layer(768, 12, 3072)
    net = torch.nn.Sequential(torch.nn.LayerNorm(768), *(layer(pre_norm=False) for _ in range(12)))
    return _export(net, (1, 128, 768), seed=16)


def make_whisper_tiny_encoder():
    """Whisper-tiny's audio encoder: Conv1d(80->384, 3) + GELU, Conv1d(stride 2) + GELU, positions,
    4 pre-norm layers (6 heads, FFN 1536), on 30 s of 80-bin log-mel features (3000 frames)."""
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(17)
    layer = _encoder_layer(384, 6, 1536)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv1d(80, 384, 3, padding=1), nn.Conv1d(384, 384, 3, 2, padding=1)
            self.pos = nn.Parameter(torch.randn(1500, 384) * 0.02)
            self.layers = nn.Sequential(*(layer(pre_norm=True) for _ in range(4)))
            self.ln = nn.LayerNorm(384)

        def forward(self, x):
            x = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(x))))
            return self.ln(self.layers(x.transpose(1, 2) + self.pos))

    return _export(Encoder(), (1, 80, 3000), seed=17)


# ---- a byte-level 1-D CNN classifier written with k x 1 convs and Tanh ----------------------------

def make_byte_cnn():
    """Byte embeddings [N, 64, L, 1] through k x 1 Conv2d layers (as TF and JAX exporters write a
    1-D conv), Tanh, max pooling along the sequence, then a linear classifier."""
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(18)

    class ByteCnn(nn.Module):
        def __init__(self):
            super().__init__()
            layers, c = [], 64
            for cout, k in ((256, 7), (256, 7), (256, 3), (256, 3), (256, 3)):
                layers += [nn.Conv2d(c, cout, (k, 1), padding=(k // 2, 0)), nn.Tanh(), nn.MaxPool2d((2, 1))]
                c = cout
            self.features = nn.Sequential(*layers)
            self.fc = nn.Linear(256, 4)

        def forward(self, x):
            return self.fc(self.features(x).amax(dim=(2, 3)))

    return _export(ByteCnn(), (4, 64, 1024, 1), seed=18)


# ---- a DBNet-style text detector: ResNet-18 backbone, FPN, ConvTranspose head, Resize ------------

def make_dbnet():
    import torchvision
    torch = _torch()
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(19)

    class DBNet(nn.Module):
        def __init__(self):
            super().__init__()
            r = torchvision.models.resnet18(weights=None)
            self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
            self.stages = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
            self.lateral = nn.ModuleList(nn.Conv2d(c, 256, 1, bias=False) for c in (64, 128, 256, 512))
            self.smooth = nn.ModuleList(nn.Conv2d(256, 64, 3, padding=1, bias=False) for _ in range(4))
            self.head = nn.Sequential(nn.Conv2d(256, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.ConvTranspose2d(64, 64, 2, 2), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.ConvTranspose2d(64, 1, 2, 2), nn.Sigmoid())

        def forward(self, x):
            feats, y = [], self.stem(x)
            for stage in self.stages:
                y = stage(y)
                feats.append(y)
            p = [lat(f) for lat, f in zip(self.lateral, feats)]
            for i in (2, 1, 0):
                p[i] = p[i] + F.interpolate(p[i + 1], scale_factor=2.0, mode="nearest")
            size = p[0].shape[-2:]
            fused = torch.cat([F.interpolate(s(q), size=size, mode="bilinear", align_corners=False) if i else s(q)
                               for i, (s, q) in enumerate(zip(self.smooth, p))], 1)
            return self.head(fused)

    return _export(DBNet(), (1, 3, 640, 640), seed=19)


def _image(shape):
    return lambda batch, rng: {"input": rng.standard_normal(shape, dtype=np.float32)}


# name: (make, input shape, timed iterations). Batch is part of the shape (deployment size).
DEPLOYED = {
    "yolov8n_320": (make_yolov8n(320), (1, 3, 320, 320), 20),
    "yolov8n_640": (make_yolov8n(640), (1, 3, 640, 640), 10),
    "efficientnet_b0": (_torchvision("efficientnet_b0", (1, 3, 224, 224), 12), (1, 3, 224, 224), 20),
    "mobilenet_v3_large": (_torchvision("mobilenet_v3_large", (1, 3, 224, 224), 13), (1, 3, 224, 224), 30),
    "convnext_tiny": (_torchvision("convnext_tiny", (1, 3, 224, 224), 20), (1, 3, 224, 224), 10),
    "vit_small": (make_vit_small, (1, 3, 224, 224), 10),
    "bert_base_s128": (make_bert_base, (1, 128, 768), 10),
    "whisper_tiny_encoder": (make_whisper_tiny_encoder, (1, 80, 3000), 10),
    "byte_cnn_kx1": (make_byte_cnn, (4, 64, 1024, 1), 20),
    "dbnet_640": (make_dbnet, (1, 3, 640, 640), 5),
    "shufflenet_v2_hardswish": (make_shufflenet_hardswish, (1, 3, 320, 320), 30),
}


def registry():
    """make_models.MODELS entries for the deployed group."""
    return {name: dict(make=make, batches=[shape[0]], iters=iters, inputs=_image(shape))
            for name, (make, shape, iters) in DEPLOYED.items()}
