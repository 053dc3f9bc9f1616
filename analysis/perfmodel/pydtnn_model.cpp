#include "analysis/perfmodel/pydtnn_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "conv/conv_problem.h"
#include "core/error.h"
#include "layers/layer.h"
#include "models/model.h"

namespace dtnn::perf {

namespace {

constexpr double kBfp = 4.0;  // float32

// PyDTNN's costs of one non-block layer at `batch` samples. need_dx: PyDTNN's Model.add passes layer.id > 1
// (the first layer computes no input gradient; a block hands its own to its layers): a Conv2D without it
// charges col2im for the dx matmul, and an FC none of its backward (fc_cpu.py's `A + B if need_dx else 0`
// binds as `(A + B) if ...`).
void leaf_cost(const Layer& layer, double b, const PydtnnParams& prm, bool need_dx, PTime& fwd, PTime& bwd) {
  const std::string type = layer.type();
  if (type == "Conv2D") {
    const ConvProblem p = ConvProblem::parse(layer.problem_string());
    const double ci = static_cast<double>(p.c / p.groups), co = static_cast<double>(p.k);
    const double kk = ci * static_cast<double>(p.r * p.s), hw = static_cast<double>(p.p() * p.q());
    fwd += pydtnn_im2col_time(kk, b * hw, prm);
    fwd += pydtnn_matmul_time(co, b * hw, kk, prm);
    bwd += pydtnn_matmul_time(co, kk, b * hw, prm);
    bwd += need_dx ? pydtnn_matmul_time(kk, b * hw, co, prm) : pydtnn_col2im_time(kk, b * hw, prm);
  } else if (type == "FC") {
    const Shape w = layer.weights_shape();
    DTNN_ASSERT(w.rank() == 2);
    const double in_f = static_cast<double>(w[0]), out_f = static_cast<double>(w[1]);
    fwd += pydtnn_matmul_time(b, out_f, in_f, prm);
    if (need_dx) {
      bwd += pydtnn_matmul_time(in_f, out_f, b, prm);
      bwd += pydtnn_matmul_time(b, in_f, out_f, prm);
    }
  } else if (type == "MaxPool2D" || type == "AveragePool2D") {
    long long kh = 0, kw = 0;
    DTNN_CHECK(std::sscanf(layer.describe().c_str(), "pool=(%lld,%lld)", &kh, &kw) == 2,
               "pydtnn model: cannot read the pool shape of '", layer.describe(), "'");
    const Shape& out = layer.output_shape();  // HWC
    DTNN_ASSERT(out.rank() == 3);
    const double m = static_cast<double>(kh * kw), n = b * static_cast<double>(out[0] * out[1] * out[2]);
    fwd += pydtnn_im2col_time(m, n, prm);
    bwd += pydtnn_col2im_time(m, n, prm);
  }
}

}  // namespace

PTime pydtnn_flops2time(double flops, double memops, const PydtnnParams& prm) {
  const double intensity = flops / (kBfp * memops);
  const double speed = std::min(prm.cpu_speed, prm.memory_bw * intensity);
  const double time = flops / (speed + 1e-8);
  const double comp = flops / (prm.cpu_speed + 1e-8);
  return {time, comp, time - comp, 0.0};
}

PTime pydtnn_im2col_time(double m, double n, const PydtnnParams& prm) { return pydtnn_flops2time(0, m * n, prm); }

PTime pydtnn_col2im_time(double m, double n, const PydtnnParams& prm) {
  return pydtnn_flops2time(m * n, m * n, prm);
}

PTime pydtnn_matmul_time(double m, double n, double k, const PydtnnParams& prm) {
  return pydtnn_flops2time(2.0 * m * n * k, m * n + m * k + n * k, prm);
}

PTime pydtnn_allreduce_time(double elems, int nprocs, const PydtnnParams& prm) {
  const double p = nprocs, lg = std::log(p) / std::log(2.0);  // Python's math.log(p, 2)
  const double bits = elems * kBfp * 8.0 / prm.network_bw;
  double time = 0.0;
  if (prm.network_alg == "bta") {
    time = 2.0 * lg * prm.network_lat + 2.0 * ((p - 1.0) / p) * bits + ((p - 1.0) / p) * (elems / prm.cpu_speed);
  } else if (prm.network_alg == "vdg") {
    const double c = std::ceil(lg);
    time = c * prm.network_lat + 2.0 * c * bits + c * (elems / prm.cpu_speed);
  } else {
    fail("--network_alg must be bta or vdg (got '", prm.network_alg, "')");
  }
  return {time, 0.0, 0.0, time};
}

std::vector<PydtnnLayer> pydtnn_layers(const std::string& name, double batch, const PydtnnParams& prm) {
  DTNN_CHECK(batch >= 1, "pydtnn model: batch per rank must be >= 1 (got ", batch, ")");
  auto model = create_model(name);
  BuildContext ctx;  // NHWC, batch 1: shapes only (the formulas take the batch)
  Shape shape;
  std::vector<PydtnnLayer> out;
  for (size_t i = 0; i < model->num_layers(); ++i) {
    Layer& layer = model->layer(i);
    shape = layer.build(shape, ctx);
    PydtnnLayer pl;
    pl.id = layer.id;
    pl.type = layer.type();
    const std::vector<Layer*> children = layer.children();
    const bool need_dx = layer.id > 1;
    if (children.empty()) {
      leaf_cost(layer, batch, prm, need_dx, pl.fwd, pl.bwd);
    } else {
      for (const Layer* c : children)
        if (c->children().empty()) leaf_cost(*c, batch, prm, need_dx, pl.fwd, pl.bwd);
    }
    if (pl.type == "Conv2D" || pl.type == "FC") pl.allreduce_elems = static_cast<double>(layer.num_params());
    out.push_back(pl);
  }
  return out;
}

PTime pydtnn_calculate_time(const std::vector<PydtnnLayer>& layers, int nprocs, bool blocking,
                            const PydtnnParams& prm) {
  PTime total;
  for (const PydtnnLayer& l : layers) total += l.fwd;
  const bool comm = nprocs > 1;
  if (blocking) {
    for (const PydtnnLayer& l : layers) total += l.bwd;
    for (const PydtnnLayer& l : layers)
      if (comm && l.allreduce_elems > 0) total += pydtnn_allreduce_time(l.allreduce_elems, nprocs, prm);
  } else {
    double iar = 0.0;
    for (const PydtnnLayer& l : layers) {
      total += l.bwd;
      if (comm && l.allreduce_elems > 0) {
        const PTime a = pydtnn_allreduce_time(l.allreduce_elems, nprocs, prm);
        total.net += a.net;
        iar = std::max(total.total, iar) + a.total;
      }
    }
    total.total = std::max(total.total, iar);
  }
  return total;
}

}  // namespace dtnn::perf
