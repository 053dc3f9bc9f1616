// Optimizer steps against values computed by hand from the update rules in optim/optimizer.h.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "optim/optimizer.h"

using namespace dtnn;

TEST_CASE("sgd: plain momentum steps", "[optim]") {
  OptimizerOptions o;
  o.name = "sgd";
  o.learning_rate = 0.1;
  o.momentum = 0.9;
  auto opt = make_optimizer(o, 2);
  float w[2] = {1.0f, -2.0f};
  const float g1[2] = {0.5f, 1.0f}, g2[2] = {-1.0f, 0.25f};
  opt->step(w, g1);  // v = g1;           w -= 0.1 v
  CHECK(w[0] == Approx(0.95f));
  CHECK(w[1] == Approx(-2.1f));
  opt->step(w, g2);  // v = 0.9 g1 + g2 = (-0.55, 1.15)
  CHECK(w[0] == Approx(0.95 + 0.055));
  CHECK(w[1] == Approx(-2.1 - 0.115));
}

TEST_CASE("sgd: nesterov and decay", "[optim]") {
  OptimizerOptions o;
  o.name = "sgd";
  o.learning_rate = 0.1;
  o.momentum = 0.5;
  o.nesterov = true;
  o.decay = 0.01;
  auto opt = make_optimizer(o, 1);
  float w[1] = {2.0f};
  const float g[1] = {1.0f};
  opt->step(w, g);  // v = 1; w -= 0.1 (0.01*2 + 1 + 0.5*1) = 2 - 0.152
  CHECK(w[0] == Approx(1.848));
  opt->step(w, g);  // v = 1.5; w -= 0.1 (0.01*1.848 + 1 + 0.75)
  CHECK(w[0] == Approx(1.848 - 0.1 * (0.01848 + 1.75)));
}

TEST_CASE("adam: bias-corrected steps with epsilon inside the square root", "[optim]") {
  OptimizerOptions o;
  o.name = "adam";
  o.learning_rate = 0.01;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.epsilon = 1e-7;
  auto opt = make_optimizer(o, 1);
  float w[1] = {1.0f};
  const float g1[1] = {0.2f}, g2[1] = {-0.4f};
  opt->step(w, g1);
  // m = 0.02, v = 4e-5; mt = 0.2, vt = 0.04; step = 0.01 * 0.2 / sqrt(0.04 + 1e-7)
  double expect = 1.0 - 0.01 * 0.2 / std::sqrt(0.04 + 1e-7);
  CHECK(w[0] == Approx(expect).epsilon(1e-6));
  opt->step(w, g2);
  const double m = 0.9 * 0.02 + 0.1 * -0.4, v = 0.999 * 4e-5 + 0.001 * 0.16;
  const double mt = m / (1 - 0.81), vt = v / (1 - 0.999 * 0.999);
  expect -= 0.01 * mt / std::sqrt(vt + 1e-7);
  CHECK(w[0] == Approx(expect).epsilon(1e-6));
}

TEST_CASE("rmsprop: steps with decay, epsilon inside the square root", "[optim]") {
  OptimizerOptions o;
  o.name = "rmsprop";
  o.learning_rate = 0.01;
  o.rho = 0.9;
  o.epsilon = 1e-7;
  o.decay = 0.001;
  auto opt = make_optimizer(o, 2);
  CHECK(std::string(opt->name()) == "rmsprop");
  float w[2] = {1.0f, -0.5f};
  const double g[3][2] = {{0.5, 2.0}, {-0.25, 1.0}, {0.125, -3.0}};
  double ew[2] = {1.0, -0.5}, c[2] = {0.0, 0.0};
  for (int t = 0; t < 3; ++t) {
    const float gf[2] = {static_cast<float>(g[t][0]), static_cast<float>(g[t][1])};
    opt->step(w, gf);
    for (int i = 0; i < 2; ++i) {
      c[i] = 0.9 * c[i] + 0.1 * g[t][i] * g[t][i];
      ew[i] -= 0.01 * (0.001 * ew[i] + g[t][i] / std::sqrt(c[i] + 1e-7));
      CHECK(w[i] == Approx(ew[i]).epsilon(1e-6));
    }
  }
  // First step by hand: c = 0.1 * 0.25 = 0.025; w0 = 1 - 0.01 * (0.001 + 0.5 / sqrt(0.0250001)).
  CHECK(opt->steps() == 3);
  REQUIRE(opt->state().size() == 1);
  CHECK(opt->state()[0].first == "cache");
  CHECK(opt->state()[0].second->data()[0] == Approx(c[0]).epsilon(1e-6));
}

TEST_CASE("nadam: bias-corrected Nesterov numerator and decay", "[optim]") {
  OptimizerOptions o;
  o.name = "nadam";
  o.learning_rate = 0.002;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.epsilon = 1e-7;
  o.decay = 0.01;
  auto opt = make_optimizer(o, 1);
  CHECK(std::string(opt->name()) == "nadam");
  float w[1] = {0.75f};
  const double g[4] = {0.2, -0.4, 0.1, 0.3};
  double ew = 0.75, m = 0.0, v = 0.0;
  for (int t = 1; t <= 4; ++t) {
    const float gf[1] = {static_cast<float>(g[t - 1])};
    opt->step(w, gf);
    m = 0.9 * m + 0.1 * g[t - 1];
    v = 0.999 * v + 0.001 * g[t - 1] * g[t - 1];
    const double mt = (m + 0.1 * g[t - 1]) / (1 - std::pow(0.9, t));
    const double vt = v / (1 - std::pow(0.999, t));
    ew -= 0.002 * (0.01 * ew + mt / std::sqrt(vt + 1e-7));
    CHECK(w[0] == Approx(ew).epsilon(1e-6));
  }
  // Step 1 by hand: m = 0.02, mt = (0.02 + 0.02) / 0.1 = 0.4, vt = 0.04: w = 0.75 - 0.002 (0.0075 + 0.4/0.2000002).
  CHECK(opt->steps() == 4);
  REQUIRE(opt->state().size() == 2);
  CHECK(opt->state()[0].first == "m");
  CHECK(opt->state()[1].first == "v");
}

TEST_CASE("adam: decay and bias correction over several steps", "[optim]") {
  OptimizerOptions o;
  o.name = "adam";
  o.learning_rate = 0.001;
  o.beta1 = 0.99;  // PyDTNN's default
  o.decay = 0.05;
  auto opt = make_optimizer(o, 1);
  float w[1] = {-1.5f};
  double ew = -1.5, m = 0.0, v = 0.0;
  for (int t = 1; t <= 5; ++t) {
    const double g = 0.1 * t - 0.25;
    const float gf[1] = {static_cast<float>(g)};
    opt->step(w, gf);
    m = 0.99 * m + 0.01 * g;
    v = 0.999 * v + 0.001 * g * g;
    ew -= 0.001 * (0.05 * ew + (m / (1 - std::pow(0.99, t))) / std::sqrt(v / (1 - std::pow(0.999, t)) + 1e-7));
    CHECK(w[0] == Approx(ew).epsilon(1e-6));
  }
}

TEST_CASE("optimizers: restoring state and step count continues bit-identically", "[optim]") {
  for (const char* name : {"sgd", "rmsprop", "adam", "nadam"}) {
    INFO(name);
    OptimizerOptions o;
    o.name = name;
    o.nesterov = true;
    auto a = make_optimizer(o, 3);
    float wa[3] = {0.1f, -0.2f, 0.3f};
    const float g1[3] = {0.5f, -1.0f, 0.25f}, g2[3] = {-0.3f, 0.7f, 0.9f};
    a->step(wa, g1);
    a->step(wa, g2);
    // A fresh optimizer given a's slabs, step count and rate takes exactly a's next step.
    auto b = make_optimizer(o, 3);
    const auto sa = a->state(), sb = b->state();
    REQUIRE(sa.size() == sb.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      CHECK(sa[i].first == sb[i].first);
      std::copy(sa[i].second->data(), sa[i].second->data() + sa[i].second->numel(), sb[i].second->data());
    }
    b->set_steps(a->steps());
    b->set_learning_rate(a->learning_rate());
    float wb[3] = {wa[0], wa[1], wa[2]};
    a->step(wa, g1);
    b->step(wb, g1);
    CHECK(std::memcmp(wa, wb, sizeof wa) == 0);
  }
}

TEST_CASE("optimizers: bad names and values are errors", "[optim]") {
  OptimizerOptions o;
  o.name = "adagrad";
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
  CHECK_THROWS_WITH(make_optimizer(o, 1), "unknown optimizer 'adagrad' (known: sgd, rmsprop, adam, nadam)");
  o.name = "rmsprop";
  o.rho = 1.0;
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
  o.rho = 0.9;
  o.name = "sgd";
  o.learning_rate = -1;
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
  o.learning_rate = 0.1;
  o.momentum = 1.5;
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
}
