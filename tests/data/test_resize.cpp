// --resize against Pillow itself: the bytes d2l's loader makes of real MNIST-format images (Pillow 9.4's
// bilinear Image.resize, captured by tests/data/fixtures/make_pil_resize.py), up, down and to an odd side.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/dataset.h"

using namespace dtnn;

namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("resize: d2l's Resize (Pillow's bilinear on bytes) byte for byte, up, down and odd", "[data]") {
  const std::string src = DTNN_SOURCE_DIR;
  const std::vector<unsigned char> pil = read_bytes(src + "/tests/data/fixtures/pil_resize.bin");
  const int64_t sides[] = {96, 20, 41}, images = 4;
  REQUIRE(pil.size() == static_cast<size_t>(images * (96 * 96 + 20 * 20 + 41 * 41)));
  const int64_t indices[] = {0, 1, 2, 3};
  size_t at = 0;
  for (int64_t side : sides) {
    auto data = resize_images(open_mnist(src + "/experiments/datasets/mnist-10k", ""), side, side, images);
    CHECK(data->shape().h == side);
    CHECK(data->shape().w == side);
    for (Layout layout : {Layout::nhwc, Layout::nchw}) {
      std::vector<float> x(static_cast<size_t>(images * side * side)), y(static_cast<size_t>(images * 10));
      data->load_batch(Pool::test, indices, images, layout, x.data(), y.data());
      int64_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i)
        if (x[i] != static_cast<float>(pil[at + i]) / 255.0f) ++bad;
      INFO("side " << side);
      CHECK(bad == 0);
    }
    at += static_cast<size_t>(images * side * side);
  }
}

TEST_CASE("resize: the same side is the image itself, synthetic data and bad sides are refused", "[data]") {
  const std::string dir = std::string(DTNN_SOURCE_DIR) + "/experiments/datasets/mnist-10k";
  auto plain = open_mnist(dir, "");
  auto same = resize_images(open_mnist(dir, ""), 28, 28, 2);
  const int64_t indices[] = {5, 7};
  std::vector<float> a(2 * 784), b(2 * 784), y(20);
  plain->load_batch(Pool::train, indices, 2, Layout::nhwc, a.data(), y.data());
  same->load_batch(Pool::train, indices, 2, Layout::nhwc, b.data(), y.data());
  CHECK(a == b);
  CHECK_THROWS_WITH(resize_images(make_synthetic(dataset_shape("mnist"), 1), 96, 96, 2),
                    Catch::Contains("--resize applies to MNIST-format image files"));
  CHECK_THROWS_WITH(resize_images(open_mnist(dir, ""), 0, 96, 2), Catch::Contains("sides must be 1..4096"));
}
