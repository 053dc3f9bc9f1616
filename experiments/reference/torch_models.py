"""The PyTorch reference's models, built layer for layer like dtnn's builders (engine/models/), for
experiments/reference/torch_train.py (whose docstring lists them).

Contract: build_model(name, input_chw=None) returns a freshly initialised nn.Sequential on the CPU for a name
in MODELS, for per-sample inputs input_chw (default MODEL_INPUT[name]; another image size only for the
MNIST-shaped models, as dtnn's --resize gives them),
initialised as dtnn does (glorot_uniform by default, he_uniform where dtnn's builder says so, zero biases,
BN gamma 1 / beta 0, momentum 0.1 in PyTorch's convention, epsilon 1e-5); it consumes torch's global RNG,
so torch.manual_seed before it fixes the weights. MODEL_INPUT gives each model's per-sample (C, H, W) and
EXPECTED_PARAMS its trainable parameter count as `dtnn models` prints it; self_check() checks both for every
model and returns an exit status.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = ("simplecnn", "simplemlp", "resnet20_cifar10", "resnet50_imagenet", "vgg11bn_cifar10", "vgg16_cifar10",
          "vgg3dobn", "resnet18_d2l")
# The per-sample input shape (C, H, W) each model expects.
MODEL_INPUT = {"simplecnn": (1, 28, 28), "simplemlp": (1, 28, 28),
               "resnet20_cifar10": (3, 32, 32), "resnet50_imagenet": (3, 224, 224),
               "vgg11bn_cifar10": (3, 32, 32), "vgg16_cifar10": (3, 32, 32), "vgg3dobn": (3, 32, 32),
               "resnet18_d2l": (1, 28, 28)}
# Trainable parameters as `dtnn models` counts them (BN gamma and beta count, running statistics do not).
EXPECTED_PARAMS = {"simplecnn": 202458, "simplemlp": 932362, "resnet20_cifar10": 272474,
                   "resnet50_imagenet": 25557032, "vgg11bn_cifar10": 9758474, "vgg16_cifar10": 15245130,
                   "vgg3dobn": 1343146, "resnet18_d2l": 11175818}


def he_uniform_(weight):
    """Keras/PyDTNN he_uniform: U(-sqrt(6 / fan_in), sqrt(6 / fan_in))."""
    nn.init.kaiming_uniform_(weight, a=0.0, mode="fan_in", nonlinearity="relu")


def batchnorm(features, spatial=True):
    """PyDTNN BatchNormalization(momentum=0.9, epsilon=1e-5) in PyTorch's momentum convention."""
    return (nn.BatchNorm2d if spatial else nn.BatchNorm1d)(features, eps=1e-5, momentum=1.0 - 0.9)


class ResidualBlock(nn.Module):
    """dtnn's AdditionBlock([residual path], [shortcut path]) followed by ReLU; an empty shortcut path is
    the identity."""

    def __init__(self, residual, shortcut=None):
        super().__init__()
        self.residual = residual
        self.shortcut = shortcut if shortcut is not None else nn.Identity()

    def forward(self, x):
        return F.relu(self.residual(x) + self.shortcut(x))


def projection(cin, cout, stride):
    """A projection shortcut: 1x1 conv with the block's stride (no bias) + BN."""
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), batchnorm(cout))


def basic_block(cin, cout, stride):
    """conv3x3/s - BN - ReLU - conv3x3 - BN (+ shortcut), ReLU; projection where the shape changes."""
    residual = nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), batchnorm(cout), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False), batchnorm(cout))
    return ResidualBlock(residual, projection(cin, cout, stride) if stride != 1 or cin != cout else None)


def bottleneck_block(cin, filters, stride):
    """v1.5 bottleneck (stride on the 3x3): conv1x1 n - BN - ReLU - conv3x3/s n - BN - ReLU - conv1x1 4n - BN
    (+ shortcut), ReLU; projection where the shape changes."""
    cout = 4 * filters
    residual = nn.Sequential(
        nn.Conv2d(cin, filters, 1, bias=False), batchnorm(filters), nn.ReLU(),
        nn.Conv2d(filters, filters, 3, stride=stride, padding=1, bias=False), batchnorm(filters), nn.ReLU(),
        nn.Conv2d(filters, cout, 1, bias=False), batchnorm(cout))
    return ResidualBlock(residual, projection(cin, cout, stride) if stride != 1 or cin != cout else None)


def init_resnet(model):
    """dtnn's ResNets: he_uniform convs (no bias), glorot FC with a zero bias."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            he_uniform_(m.weight)
        elif isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def resnet_cifar(n):
    """He et al.'s CIFAR ResNet-(6n+2) as dtnn's resnet_cifar10_6n2 builds it."""
    layers = [nn.Conv2d(3, 16, 3, padding=1, bias=False), batchnorm(16), nn.ReLU()]
    cin = 16
    for s, cout in enumerate((16, 32, 64)):
        for b in range(n):
            layers.append(basic_block(cin, cout, 2 if s > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return init_resnet(nn.Sequential(*layers))


def resnet_imagenet(blocks):
    """dtnn's resnet_imagenet with bottleneck blocks (torchvision's ResNet-50/101/152 v1.5): conv7x7/2 p3 64
    - BN - ReLU - maxpool 3x3/2 p1, four stages (64, 128, 256, 512 filters; stride 1, 2, 2, 2), GAP, FC1000."""
    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), batchnorm(64), nn.ReLU(),
              nn.MaxPool2d(3, stride=2, padding=1)]
    channels = 64
    for s, filters in enumerate((64, 128, 256, 512)):
        for b in range(blocks[s]):
            layers.append(bottleneck_block(channels, filters, 2 if s > 0 and b == 0 else 1))
            channels = 4 * filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 1000)]
    return init_resnet(nn.Sequential(*layers))


def init_he(model):
    """he_uniform for every conv and FC weight, zero biases (PyDTNN's CIFAR VGGs)."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            he_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def vgg_features(stages, bn):
    """dtnn's VGG features: per stage, `layers` x (conv3x3 p1 with bias [- BN] - ReLU), then maxpool 2/2."""
    layers, cin = [], 3
    for n, cout in stages:
        for _ in range(n):
            layers += [nn.Conv2d(cin, cout, 3, padding=1)] + ([batchnorm(cout)] if bn else []) + [nn.ReLU()]
            cin = cout
        layers.append(nn.MaxPool2d(2, stride=2))
    return layers


VGG11 = ((1, 64), (1, 128), (2, 256), (2, 512), (2, 512))
VGG16 = ((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))


def vgg11bn_cifar10():
    """PyDTNN's vgg11bn_cifar10 as dtnn builds it: he_uniform everywhere, conv biases kept."""
    layers = vgg_features(VGG11, bn=True)
    layers += [nn.Flatten(),
               nn.Dropout(0.5), nn.Linear(512, 512), batchnorm(512, False), nn.ReLU(),
               nn.Dropout(0.5), nn.Linear(512, 512), batchnorm(512, False), nn.ReLU(),
               nn.Linear(512, 10)]
    return init_he(nn.Sequential(*layers))


def vgg16_cifar10():
    """PyDTNN's vgg16_cifar10 as dtnn builds it (plain head, no BN): he_uniform everywhere, zero biases."""
    layers = vgg_features(VGG16, bn=False)
    layers += [nn.Flatten(),
               nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.5),
               nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.5),
               nn.Linear(512, 10)]
    return init_he(nn.Sequential(*layers))


def vgg3dobn():
    """PyDTNN's vgg3dobn as dtnn builds it (zoo_vgg.cpp): per stage (32, 64, 128) 2 x (conv3x3 - ReLU - BN),
    maxpool 2/2, dropout .2/.3/.4; FC512 - ReLU - BN - dropout .5 - FC10; he_uniform, zero biases."""
    layers, cin = [], 3
    for cout, rate in ((32, 0.2), (64, 0.3), (128, 0.4)):
        for _ in range(2):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), batchnorm(cout)]
            cin = cout
        layers += [nn.MaxPool2d(2, stride=2), nn.Dropout(rate)]
    layers += [nn.Flatten(), nn.Linear(128 * 4 * 4, 512), nn.ReLU(), batchnorm(512, False), nn.Dropout(0.5),
               nn.Linear(512, 10)]
    return init_he(nn.Sequential(*layers))


class D2lResidual(nn.Module):
    """d2l's Residual: conv3x3/s (bias) - BN - ReLU - conv3x3 (bias) - BN, plus the input or, where the
    block downsamples, a 1x1 strided conv of it (bias, no BN); then ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.bn1 = batchnorm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = batchnorm(cout)
        self.conv3 = nn.Conv2d(cin, cout, 1, stride=stride) if stride != 1 else None

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.conv3(x) if self.conv3 is not None else x))


def resnet18_d2l():
    """d2l's "slightly modified ResNet-18" for Fashion-MNIST (concise multi-GPU chapter), as dtnn's
    resnet18_d2l builds it: conv3x3 p1 64 - BN - ReLU, stages of two D2lResidual blocks (64, 128, 256, 512;
    the first block of stages 2-4 at stride 2), GAP, FC10. Weights N(0, 0.01^2) as d2l's init_weights sets
    them; biases zero (DJL's default; d2l's PyTorch edition keeps nn's default uniform biases)."""
    layers = [nn.Conv2d(1, 64, 3, padding=1), batchnorm(64), nn.ReLU()]
    cin = 64
    for s, cout in enumerate((64, 128, 256, 512)):
        for b in range(2):
            layers.append(D2lResidual(cin, cout, 2 if s > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, std=0.01)
            nn.init.zeros_(m.bias)
    return model


def model_input(name, resize=0):
    """The per-sample (C, H, W) a model takes: MODEL_INPUT's, or resize x resize under --resize."""
    c, h, w = MODEL_INPUT[name]
    return (c, resize, resize) if resize else (c, h, w)


def build_model(name, input_chw=None):
    _, h, w = input_chw or MODEL_INPUT[name]
    if name == "resnet18_d2l":
        return resnet18_d2l()
    if name == "vgg3dobn":
        return vgg3dobn()
    if name == "resnet20_cifar10":
        return resnet_cifar(3)
    if name == "resnet50_imagenet":
        return resnet_imagenet((3, 4, 6, 3))
    if name == "vgg11bn_cifar10":
        return vgg11bn_cifar10()
    if name == "vgg16_cifar10":
        return vgg16_cifar10()
    if name == "simplemlp":
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(h * w, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 512), nn.ReLU(),
            nn.Linear(512, 10))
    else:  # simplecnn
        model = nn.Sequential(
            nn.Conv2d(1, 4, 3, stride=1, padding=1), nn.ReLU(),
            nn.Conv2d(4, 8, 3, stride=1, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, stride=2),
            nn.Flatten(),
            nn.Linear(8 * (h // 2) * (w // 2), 128), nn.ReLU(),
            nn.Dropout(0.5),
            nn.Linear(128, 10))
    for m in model.modules():  # PyDTNN defaults: glorot_uniform weights, zero biases
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def self_check():
    """Build every model: parameter count against dtnn's, output shape of a 2-sample forward pass, and
    resnet50_imagenet's count against torchvision's where torchvision is installed. Returns an exit status."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    bad = 0
    for name in MODELS:
        model = build_model(name).eval()
        n = count_params(model)
        classes = 1000 if name.endswith("_imagenet") else 10
        with torch.no_grad():
            out = model(torch.randn((2,) + MODEL_INPUT[name]))
        ok = n == EXPECTED_PARAMS[name] and tuple(out.shape) == (2, classes)
        bad += not ok
        c, h, w = MODEL_INPUT[name]
        print(f"{name:<18} input {f'{h}x{w}x{c}':<10} params {n:>11,} (dtnn {EXPECTED_PARAMS[name]:,})  "
              f"output {tuple(out.shape)}  {'ok' if ok else 'MISMATCH'}")
    try:
        import torchvision
    except ImportError:
        print("torchvision not installed: resnet50 not compared with torchvision's")
    else:
        n = count_params(torchvision.models.resnet50())
        ok = n == EXPECTED_PARAMS["resnet50_imagenet"]
        bad += not ok
        print(f"torchvision {torchvision.__version__} resnet50 params {n:,}  {'ok' if ok else 'MISMATCH'}")
    return 1 if bad else 0

