// engine/core: the shared helpers, each against values that do not depend on how it is implemented.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/median.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "helpers.h"

namespace fs = std::filesystem;

TEST_CASE("core: sha256_hex matches the FIPS 180-4 vectors", "[core]") {
  CHECK(dtnn::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(dtnn::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(dtnn::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Padding boundaries: 55 bytes fit one block, 56 and 64 need two.
  CHECK(dtnn::sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(dtnn::sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(dtnn::sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(dtnn::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("core: median of odd and even counts", "[core]") {
  CHECK(dtnn::median({5.0}) == 5.0);
  CHECK(dtnn::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(dtnn::median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK_THROWS_AS(dtnn::median({}), dtnn::Error);
  CHECK_THROWS_AS(dtnn::median({1.0, std::nan("")}), dtnn::Error);
}

TEST_CASE("core: join and format_double", "[core]") {
  CHECK(dtnn::join({}, ", ") == "");
  CHECK(dtnn::join({"a"}, ", ") == "a");
  CHECK(dtnn::join({"a", "b", "c"}, ", ") == "a, b, c");
  CHECK(dtnn::format_double(0.001) == "0.001");
  CHECK(dtnn::format_double(1.0) == "1");
  CHECK(dtnn::format_double(300) == "300");
  CHECK(dtnn::format_double(0.1) == "0.1");
  CHECK(std::stod(dtnn::format_double(1.0 / 3.0)) == 1.0 / 3.0);
}

TEST_CASE("core: write_file_atomically replaces a file whole and read_file reads it back", "[core]") {
  const fs::path dir = fs::temp_directory_path() / ("dtnn_core_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "f.txt").string();
  dtnn::write_file_atomically(path, "first");
  dtnn::write_file_atomically(path, std::string("sec\0nd", 6));
  CHECK(dtnn::read_file(path) == std::string("sec\0nd", 6));
  CHECK_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
  {
    dtnn::AtomicFile f(path);
    f.write("abandoned");
  }  // no commit: the old file stays, the temporary goes
  CHECK(dtnn::read_file(path) == std::string("sec\0nd", 6));
  CHECK_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid())));
  CHECK_THROWS_WITH(dtnn::write_file_atomically((dir / "no" / "f").string(), "x"), Catch::Contains("no/f"));
  CHECK_THROWS_WITH(dtnn::read_file(dir.string()), Catch::Contains("cannot read the file"));
  CHECK_THROWS_WITH(dtnn::read_file((dir / "missing").string()), Catch::Contains("missing: cannot read the file"));
  fs::remove_all(dir);
}

TEST_CASE("core: the environment is captured once and names this build", "[core]") {
  const dtnn::Environment& e = dtnn::environment();
  CHECK(&e == &dtnn::environment());
  CHECK_FALSE(e.host.empty());
  CHECK(e.cores > 0);
  CHECK(e.cpu_id.find(" (family ") != std::string::npos);
  CHECK_FALSE(e.dtnn_version.empty());
  CHECK(e.dtnn_version.find_first_not_of("0123456789.") == std::string::npos);
}

TEST_CASE("core: shell_quote gives back each argument through a real /bin/sh", "[core]") {
  const std::string pwned = dtnn::test::temp_path("pwned");  // a file the quoted words would create if unquoted
  std::filesystem::remove(pwned);
  const std::vector<std::string> nasty = {"plain", "", "two words", "y' ; touch " + pwned + " ; '", "$HOME",
                                          "`id`", "a\"b", "back\\slash", "semi;colon", "glob*?[x]", "~user", "-n",
                                          "tab\there", "new\nline", "--dataset_train_path=/data/mnist-10k"};
  for (const std::string& arg : nasty) {
    INFO(arg);
    const std::string out = dtnn::test::temp_path("shell_quote.out");
    const std::string cmd = "printf '%s' " + dtnn::shell_quote(arg) + " > " + out;
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream f(out, std::ios::binary);
    const std::string back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(back == arg);
    std::filesystem::remove(out);
  }
  CHECK_FALSE(std::filesystem::exists(pwned));
  CHECK(dtnn::shell_quote("--model=simplecnn") == "--model=simplecnn");  // stored commands stay readable
}

TEST_CASE("bf16: rounding to nearest, ties to even, NaN and infinities kept", "[core][bf16]") {
  using dtnn::from_bf16;
  using dtnn::to_bf16;
  CHECK(to_bf16(1.0f) == 0x3f80);
  CHECK(from_bf16(0x3f80) == 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even significand (1); 1 + 3 * 2^-8 to 1 + 2^-6.
  CHECK(to_bf16(1.0f + 0x1p-8f) == 0x3f80);
  CHECK(to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  // past halfway: up
  CHECK(to_bf16(-2.5f) == 0xc020);
  CHECK(std::isnan(from_bf16(to_bf16(std::nanf("")))));
  CHECK(std::isinf(from_bf16(to_bf16(INFINITY))));
  CHECK(from_bf16(to_bf16(3.4e38f)) == INFINITY);  // past bf16's largest finite (3.39e38): overflows
  for (float x : {0.1f, -7.3f, 1e-30f, 12345.678f}) CHECK(std::fabs(from_bf16(to_bf16(x)) - x) <= std::fabs(x) * 0x1p-8f);
}
