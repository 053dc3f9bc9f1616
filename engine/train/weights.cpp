// Weight files: NPZ archives with PyDTNN's key names, readable with numpy.load.
#include <map>

#include "core/error.h"
#include "io/npz.h"
#include "io/npz_values.h"
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

// Every array a weights file holds: the trainable parameters and the buffers (BatchNormalization's
// running statistics), of every layer including those inside blocks, in id order.
template <typename F>
void for_each_array(const Model& model, F f) {
  for (Layer* layer : model.all_layers()) {
    for (Param& p : layer->params()) f(*layer, p);
    for (Param& b : layer->buffers()) f(*layer, b);
  }
}

}  // namespace

void save_weights(const Model& model, const std::string& path) { io::write_npz(path, weight_arrays(model), true); }

void load_weights(Model& model, const std::string& path) {
  std::map<std::string, io::NpyArray> by_name;
  for (io::NpyArray& a : io::read_npz(path)) by_name.emplace(a.name, std::move(a));
  // Check every key and shape before touching the model, so a bad file changes nothing; the error
  // names the first mismatching key in id order.
  for_each_array(model, [&](const Layer& layer, const Param& p) {
    const std::string k = key(layer, p);
    const auto it = by_name.find(k);
    DTNN_CHECK(it != by_name.end(), path, ": no array '", k, "' for model ", model.name());
    DTNN_CHECK(it->second.shape == dims(p.shape), path, ": array '", k, "' has shape ", dims_str(it->second.shape),
               ", the model needs ", p.shape.str());
  });
  std::map<std::string, std::vector<float>> values;
  for_each_array(model, [&](const Layer& layer, const Param& p) {
    const std::string k = key(layer, p);
    std::vector<float>& v = values[k] = by_name.at(k).to_float();
    io::require_finite(v.data(), v.size(), k, path);
  });
  for_each_array(model, [&](const Layer& layer, Param& p) {
    const std::vector<float>& v = values.at(key(layer, p));
    std::copy(v.begin(), v.end(), p.host.data());
  });
  model.upload();
}

std::vector<io::NpyArray> weight_arrays(const Model& model) {
  model.download();
  std::vector<io::NpyArray> arrays;
  for_each_array(model, [&](const Layer& layer, const Param& p) {
    arrays.push_back(io::make_f32(key(layer, p), dims(p.shape), p.host.data()));
  });
  return arrays;
}

}  // namespace dtnn
