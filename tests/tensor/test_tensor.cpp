#include <catch2/catch.hpp>
#include <cstdint>

#include "core/error.h"
#include "tensor/tensor.h"

using namespace dtnn;

TEST_CASE("tensor: owned storage is zeroed, 64-byte aligned, and views share it", "[tensor]") {
  Tensor t = Tensor::zeros(Shape{4, 3, 5, 2}, Layout::nhwc);
  REQUIRE(t.owns_storage());
  REQUIRE(reinterpret_cast<uintptr_t>(t.data()) % 64 == 0);
  for (int64_t i = 0; i < t.numel(); ++i) REQUIRE(t.data()[i] == 0.0f);
  CHECK(t.n() == 4);
  CHECK(t.h() == 3);
  CHECK(t.w() == 5);
  CHECK(t.c() == 2);

  Tensor v = t.view();
  CHECK_FALSE(v.owns_storage());
  v.data()[7] = 3.5f;
  CHECK(t.data()[7] == 3.5f);

  Tensor b = t.batch(2);
  CHECK(b.shape() == Shape{2, 3, 5, 2});
  CHECK(b.data() == t.data());

  Tensor flat = t.reshaped(Shape{4, 30}, Layout::flat);
  CHECK(flat.data()[7] == 3.5f);
  CHECK_THROWS_AS(t.reshaped(Shape{4, 31}, Layout::flat), Error);
}

TEST_CASE("tensor: layout-aware dimensions and shape printing", "[tensor]") {
  Tensor t = Tensor::zeros(activation_shape(Layout::nchw, 2, 3, 4, 5), Layout::nchw);
  CHECK(t.shape() == Shape{2, 3, 4, 5});
  CHECK(t.c() == 3);
  CHECK(t.h() == 4);
  CHECK(t.w() == 5);
  CHECK(Shape{128}.str() == "(128,)");
  CHECK(Shape{28, 28, 1}.str() == "(28, 28, 1)");
  CHECK(parse_layout("NHWC") == Layout::nhwc);
  CHECK_THROWS_AS(parse_layout("NWHC"), Error);
}

TEST_CASE("tensor: moving transfers ownership without copying", "[tensor]") {
  Tensor a = Tensor::zeros(Shape{10});
  float* p = a.data();
  Tensor b = std::move(a);
  CHECK(b.data() == p);
  CHECK(b.owns_storage());
}
