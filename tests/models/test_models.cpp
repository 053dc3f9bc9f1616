// The model zoo: every registered model builds for its dataset's shape, canonical architectures have
// their canonical parameter counts, NHWC and NCHW builds compute the same function, and every model
// trains (the loss on a fixed small batch falls after a few gradient steps).
//
// Cost: the default cases plan the ImageNet models (models/plan.h: layer shapes only, no parameter slab,
// no initialisation) and fully build and train only the models under 1 forward GFLOP per sample; the
// [slow] case (ctest label `slow`) fully builds and trains the rest (ImageNet and the big CIFAR ones).
//
// Expected counts (trainable values only: BN gamma/beta, not the running statistics):
//   - ImageNet models: torchvision 0.14 (sum of p.numel() over model.parameters(); googlenet and
//     inception_v3 with aux_logits=False), checked on this machine with Debian's python3-torchvision;
//     AlexNet: the one-tower 96-filter network at 227x227 (62,378,344, the sum of its layer sizes);
//     MobileNet: Keras MobileNet(alpha=1) trainable parameters (4,231,976; the closed form below).
//   - CIFAR ResNet-(6n+2): the closed form below (projection shortcuts); ResNet-20 = 272,474, which the
//     PyTorch build in experiments/reference/torch_models.py also prints (option A, without the projection
//     convs and BNs, would be 269,722).
//   - vgg16_cifar10: 15,245,130 (PyDTNN's README); vgg11bn_cifar10: 9,758,474 (torch_models.py's build).
//   - resnet18_d2l: 11,175,818, summed by hand layer by layer (zoo_resnet.cpp) and printed by the PyTorch
//     build of d2l's network in torch_models.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <map>
#include <string>
#include <vector>

#include "conv/conv_problem.h"
#include "data/dataset.h"
#include "helpers.h"
#include "models/model.h"
#include "models/plan.h"
#include "optim/optimizer.h"
#include "train/losses.h"

using namespace dtnn;

namespace {

bool is_imagenet(const ModelInfo& info) { return std::string(info.dataset) == "imagenet"; }

// Models cheap enough to fully build and train in the default test run.
constexpr double kDefaultFlops = 1e9;

std::unique_ptr<Model> build(const std::string& name, Layout layout, int64_t batch, uint64_t seed = 0) {
  auto model = create_model(name);
  BuildContext ctx;
  ctx.layout = layout;
  ctx.max_batch = batch;
  model->build(ctx, seed);
  model->seed_layers(seed, 0);
  return model;
}

int64_t conv_params(int64_t cin, int64_t cout, int64_t k, bool bias) { return cin * cout * k * k + (bias ? cout : 0); }
int64_t bn_params(int64_t c) { return 2 * c; }

// He et al.'s CIFAR ResNet-(6n+2) as dtnn builds it: stem conv3x3 16 + BN, three stages of n basic blocks
// (16, 32, 64 filters; convs without bias, each followed by BN), a 1x1 conv + BN projection where the
// channel count changes, FC 64 -> 10.
int64_t resnet_6n2_params(int n) {
  int64_t p = conv_params(3, 16, 3, false) + bn_params(16), cin = 16;
  for (int64_t cout : {16, 32, 64}) {
    for (int b = 0; b < n; ++b) {
      p += conv_params(cin, cout, 3, false) + bn_params(cout) + conv_params(cout, cout, 3, false) + bn_params(cout);
      if (cin != cout) p += conv_params(cin, cout, 1, false) + bn_params(cout);
      cin = cout;
    }
  }
  return p + 64 * 10 + 10;
}

// Keras MobileNet(alpha=1, include_top=True), trainable: stem conv3x3 3->32 (no bias) + BN, 13
// depthwise 3x3 (no bias) + BN + pointwise 1x1 (no bias) + BN, and the 1024 -> 1000 classifier.
int64_t mobilenet_params() {
  int64_t p = conv_params(3, 32, 3, false) + bn_params(32), cin = 32;
  for (int64_t cout : {64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024, 1024}) {
    p += 9 * cin + bn_params(cin) + conv_params(cin, cout, 1, false) + bn_params(cout);
    cin = cout;
  }
  return p + 1024 * 1000 + 1000;
}

const std::map<std::string, int64_t>& canonical_counts() {
  static const std::map<std::string, int64_t> counts = {
      {"simplecnn", 202458},
      {"alexnet", 62378344},
      {"alexnet_imagenet", 62378344},
      {"vgg11", 132863336},
      {"vgg11_imagenet", 132863336},
      {"vgg16", 138357544},
      {"vgg16_imagenet", 138357544},
      {"vgg19", 143667240},
      {"vgg19_imagenet", 143667240},
      {"vgg11bn_imagenet", 132868840},
      {"vgg16bn_imagenet", 138365992},
      {"vgg19bn_imagenet", 143678248},
      {"vgg16_cifar10", 15245130},
      {"vgg11bn_cifar10", 9758474},
      {"resnet18_imagenet", 11689512},
      {"resnet34_imagenet", 21797672},
      {"resnet50_imagenet", 25557032},
      {"resnet101_imagenet", 44549160},
      {"resnet152_imagenet", 60192808},
      {"resnet20_cifar10", 272474},
      {"resnet18_d2l", 11175818},
      {"resnet32_cifar10", resnet_6n2_params(5)},
      {"resnet44_cifar10", resnet_6n2_params(7)},
      {"resnet56_cifar10", resnet_6n2_params(9)},
      {"resnet110_cifar10", resnet_6n2_params(18)},
      {"resnet1202_cifar10", resnet_6n2_params(200)},
      {"densenet121_imagenet", 7978856},
      {"densenet161_imagenet", 28681000},
      {"densenet169_imagenet", 14149480},
      {"densenet201_imagenet", 20013928},
      {"googlenet_imagenet", 6624904},
      {"inceptionv3_imagenet", 23834568},
      {"mobilenetv1_imagenet", 4231976},
  };
  return counts;
}

// A fixed batch: inputs uniform in [-1, 1) (the scale of standardised data), label i % classes.
struct Batch {
  std::vector<float> x, y;
};
Batch fixed_batch(const Model& m, int64_t n) {
  const int64_t sample = m.input_shape().numel(), classes = m.output_shape()[0];
  Batch b;
  b.x.resize(n * sample);
  b.y.assign(n * classes, 0.0f);
  Rng rng(1234);
  test::fill_uniform(b.x, rng);
  for (int64_t i = 0; i < n; ++i) b.y[i * classes + i % classes] = 1.0f;
  return b;
}

// Trains `steps` steps on one fixed batch and returns the train-mode loss before each step and after the
// last one (steps + 1 values). The layers are re-seeded before every forward, so dropout draws the same
// masks each time and the loss is a deterministic function of the parameters. The step is plain
// gradient descent (the sgd optimizer without momentum) with the learning rate set to eta / ||g||: every
// step moves the parameters by the same small distance eta whatever the model's size and scale, so with
// correct gradients the loss must fall.
std::vector<double> train_fixed_batch(const std::string& name, int64_t n, int steps, double eta) {
  auto model = build(name, Layout::nhwc, n);
  const Batch b = fixed_batch(*model, n);
  const int64_t classes = model->output_shape()[0];
  const size_t last = model->num_layers() - 1;
  REQUIRE(model->layer(last).type() == "Softmax");
  OptimizerOptions o;
  o.name = "sgd";
  o.momentum = 0.0;
  auto opt = make_optimizer(o, model->slab_size());
  std::vector<double> losses;
  for (int s = 0; s <= steps; ++s) {
    std::copy(b.x.begin(), b.x.end(), model->input().data());
    model->seed_layers(0, 0);
    model->forward(n, Mode::train);
    const double loss = cce_from_logits(model->activation(last - 1, n).data(), b.y.data(), n, classes,
                                        static_cast<double>(n), model->gradient(last - 1, n).data());
    losses.push_back(loss / static_cast<double>(n));
    if (s == steps) break;
    model->backward(n, last - 1);
    double norm2 = 0.0;
    const float* g = model->grad_slab();
    for (int64_t i = 0; i < model->slab_size(); ++i) norm2 += static_cast<double>(g[i]) * g[i];
    REQUIRE(norm2 > 0.0);
    opt->set_learning_rate(eta / std::sqrt(norm2));
    opt->step(model->param_slab(), model->grad_slab());
  }
  return losses;
}

// eta must be small against the model's curvature at initialisation, which BatchNormalization over a
// batch of 2 or 4 makes very sharp for some: MobileNet's loss rises after a step of 1e-2, ResNet-1202's
// (loss ~10 at initialisation: 600 residual branches add up) after one of 1e-3.
void check_trains(const std::string& name, int64_t n, int steps, double eta) {
  const std::vector<double> losses = train_fixed_batch(name, n, steps, eta);
  INFO(name << ": loss " << losses.front() << " -> " << losses.back());
  CHECK(std::isfinite(losses.back()));
  CHECK(losses.back() < losses.front());
}

}  // namespace

TEST_CASE("models: every registered model has its dataset's input, ends in (classes,) and builds", "[models]") {
  std::map<std::string, int> seen;
  for (const ModelInfo& info : model_zoo()) {
    INFO(info.name);
    CHECK(++seen[info.name] == 1);  // unique names
    const DatasetShape ds = dataset_shape(info.dataset);
    const ModelPlan p = plan_model(info.name);
    CHECK(p.output == Shape{ds.classes});
    const auto unbuilt = create_model(info.name);
    CHECK(unbuilt->layer(unbuilt->num_layers() - 1).type() == "Softmax");
    REQUIRE(p.input.rank() == 3);  // HWC
    CHECK(p.input[2] == ds.c);
    if (is_imagenet(info)) {
      // ImageNet images are cropped to the model's input: 224 (most), 227 (AlexNet), 299 (Inception v3).
      CHECK(p.input[0] == p.input[1]);
      CHECK((p.input[0] == 224 || p.input[0] == 227 || p.input[0] == 299));
    } else {
      CHECK(p.input[0] == ds.h);
      CHECK(p.input[1] == ds.w);
    }
    CHECK(p.params > 0);
    CHECK(p.forward_flops > 0.0);
    if (p.forward_flops < kDefaultFlops) {  // the full build agrees with the plan (the others: the [slow] case)
      auto model = build(info.name, Layout::nhwc, 1);
      CHECK(model->input_shape() == p.input);
      CHECK(model->output_shape() == p.output);
      CHECK(model->num_params() == p.params);
    }
  }
  for (const char* name : {"simplecnn", "simplemlp", "alexnet", "vgg1", "vgg3dobn", "vgg16bn_cifar10",
                           "resnet20_cifar10", "resnet44_cifar10", "resnet50_imagenet", "densenet121_imagenet",
                           "googlenet_imagenet", "inceptionv3_imagenet", "mobilenetv1_cifar10"})
    CHECK(seen.count(name) == 1);
}

TEST_CASE("models: canonical architectures have their canonical parameter counts", "[models]") {
  CHECK(resnet_6n2_params(3) == 272474);
  CHECK(mobilenet_params() == 4231976);
  for (const auto& [name, expected] : canonical_counts()) {
    INFO(name);
    CHECK(plan_model(name).params == expected);
  }
}

TEST_CASE("cli: dtnn models lists every zoo model with its dataset, input shape and parameters", "[models][cli]") {
  const std::string out = test::temp_path("models.txt");
  REQUIRE(std::system((std::string(DTNN_BINARY) + " models > " + out).c_str()) == 0);
  std::ifstream f(out);
  std::map<std::string, std::string> lines;
  std::string line;
  while (std::getline(f, line)) lines[line.substr(0, line.find(' '))] = line;
  std::remove(out.c_str());
  for (const ModelInfo& info : model_zoo()) {
    INFO(info.name);
    REQUIRE(lines.count(info.name) == 1);
    const ModelPlan p = plan_model(info.name);
    std::istringstream fields(lines[info.name]);
    std::string name, dataset;
    fields >> name >> dataset;
    CHECK(dataset == info.dataset);
    CHECK(lines[info.name].find(p.input.str()) != std::string::npos);
    CHECK(lines[info.name].find(" " + std::to_string(p.params) + " ") != std::string::npos);
  }
}

TEST_CASE("models: NHWC and NCHW builds with the same seed compute the same outputs", "[models]") {
  const int64_t n = 2;
  // Models whose Flatten sees a 1x1 map: elsewhere the flattened order (HWC vs CHW) differs between the
  // layouts, so the FC that follows computes a different function from the same weights (as in PyDTNN).
  for (const char* name : {"resnet20_cifar10", "vgg11bn_cifar10", "densenet_cifar10", "googlenet_cifar10",
                           "mobilenetv1_cifar10"}) {
    INFO(name);
    auto a = build(name, Layout::nhwc, n, 7), b = build(name, Layout::nchw, n, 7);
    REQUIRE(a->num_params() == b->num_params());
    const Shape in = a->input_shape();  // H, W, C
    const int64_t h = in[0], w = in[1], c = in[2];
    Rng rng(99);
    std::vector<float> x(n * h * w * c);
    test::fill_uniform(x, rng);
    float* xa = a->input().data();
    float* xb = b->input().data();
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t k = 0; k < c; ++k) {
            const float v = x[((s * h + i) * w + j) * c + k];
            xa[((s * h + i) * w + j) * c + k] = v;
            xb[((s * c + k) * h + i) * w + j] = v;
          }
    a->forward(n, Mode::evaluate);
    b->forward(n, Mode::evaluate);
    const Tensor ya = a->output(n), yb = b->output(n);
    REQUIRE(ya.numel() == yb.numel());
    CHECK(test::max_rel_error(ya.data(), yb.data(), ya.numel()) < 1e-4);
  }
}

TEST_CASE("models: every model under 1 GFLOP per sample trains (loss on a fixed batch falls)", "[models]") {
  for (const ModelInfo& info : model_zoo()) {
    if (plan_model(info.name).forward_flops >= kDefaultFlops) continue;
    CHECK(!is_imagenet(info));
    check_trains(info.name, 4, 2, 1e-3);
  }
}

// The full build of the ImageNet models (their canonical counts from the Model itself) and the training
// check of every model over 1 GFLOP per sample (ImageNet, and the big CIFAR ResNets, DenseNets,
// GoogLeNet, Inception v3).
TEST_CASE("models: every model over 1 GFLOP per sample trains (loss on a fixed batch falls)", "[models][slow]") {
  for (const ModelInfo& info : model_zoo()) {
    if (plan_model(info.name).forward_flops < kDefaultFlops) continue;
    if (is_imagenet(info)) {
      const auto c = canonical_counts().find(info.name);
      if (c != canonical_counts().end()) {
        INFO(info.name);
        CHECK(build(info.name, Layout::nhwc, 1)->num_params() == c->second);
      }
    }
    // Batch 2 for the ImageNet models; 4 for the CIFAR ones, whose FC - BN heads degenerate on 2 samples.
    check_trains(info.name, is_imagenet(info) ? 2 : 4, 2, 1e-4);
  }
}

// suites/shapes/<model>.txt are `dtnn layers --model <model> --list` outputs: the benchmark suite must time
// the convolutions the zoo actually has, so a changed model fails here until its file is regenerated.
TEST_CASE("models: suites/shapes files list each model's convolution layers", "[models]") {
  for (const char* name : {"resnet20_cifar10", "vgg16_cifar10", "resnet50_imagenet", "alexnet_imagenet",
                           "mobilenetv1_imagenet", "simplecnn"}) {
    INFO(name);
    std::map<std::string, int> expected;
    for (const std::string& text : dtnn::plan_model(name).conv_problems) {
      dtnn::ConvProblem p = dtnn::ConvProblem::parse(text).with_batch(64);
      ++expected[p.str()];
    }
    std::map<std::string, int> listed;
    std::ifstream f(std::string(DTNN_SOURCE_DIR) + "/suites/shapes/" + name + ".txt");
    REQUIRE(f.good());
    for (std::string line; std::getline(f, line);) {
      if (line.empty() || line[0] == '#') continue;
      const auto hash = line.find("  # x");
      REQUIRE(hash != std::string::npos);
      listed[line.substr(0, hash)] = std::stoi(line.substr(hash + 5));
    }
    CHECK(listed == expected);
  }
}
