// Optimizer steps against values computed by hand from the update rules in optim/optimizer.h.
#include <catch2/catch.hpp>
#include <cmath>

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

TEST_CASE("optimizers: bad names and values are errors", "[optim]") {
  OptimizerOptions o;
  o.name = "adagrad";
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
  o.name = "sgd";
  o.learning_rate = -1;
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
  o.learning_rate = 0.1;
  o.momentum = 1.5;
  CHECK_THROWS_AS(make_optimizer(o, 1), Error);
}
