// Weight files: NPZ archives with PyDTNN's key names, readable with numpy.load.
#include <map>

#include "core/error.h"
#include "io/npz.h"
#include "train/output.h"

namespace dtnn {
namespace {

std::string key(const Layer& layer, const Param& p) { return std::to_string(layer.id) + "_" + layer.type() + "_" + p.name; }

std::vector<int64_t> dims(const Shape& s) {
  std::vector<int64_t> d;
  for (int i = 0; i < s.rank(); ++i) d.push_back(s[i]);
  return d;
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

}  // namespace

void save_weights(const Model& model, const std::string& path) {
  std::vector<io::NpyArray> arrays;
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const Layer& layer = model.layer(i);
    for (const Param& p : layer.params()) arrays.push_back(io::make_f32(key(layer, p), dims(p.shape), p.value.data()));
  }
  io::write_npz(path, arrays, true);
}

void load_weights(Model& model, const std::string& path) {
  std::map<std::string, io::NpyArray> by_name;
  for (io::NpyArray& a : io::read_npz(path)) by_name.emplace(a.name, std::move(a));
  // Check every key and shape before touching the model, so a bad file changes nothing.
  for (size_t i = 0; i < model.num_layers(); ++i)
    for (const Param& p : model.layer(i).params()) {
      const std::string k = key(model.layer(i), p);
      const auto it = by_name.find(k);
      DTNN_CHECK(it != by_name.end(), path, ": no array '", k, "' for model ", model.name());
      DTNN_CHECK(it->second.shape == dims(p.shape), path, ": array '", k, "' has shape ", dims_str(it->second.shape),
                 ", the model needs ", p.shape.str());
    }
  for (size_t i = 0; i < model.num_layers(); ++i)
    for (Param& p : model.layer(i).params()) {
      const std::vector<float> v = by_name.at(key(model.layer(i), p)).to_float();
      std::copy(v.begin(), v.end(), p.value.data());
    }
}

}  // namespace dtnn
