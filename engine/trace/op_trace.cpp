#include "trace/op_trace.h"

namespace dtnn {
namespace {

// PyDTNN's operation codes: the newest events list found, pydtnn/tracers/events.py's OpsEventEnum (55
// codes, ALLREDUCE = 1 .. LAYER_DECODE = 55; it supersedes the 6-, 19-, 28-, 39- and 53-code lists of
// older PyDTNN versions, which numbered the same operations differently). value = layer id * 55 + code,
// name "<id>_<Layer>_<member name in lower case>".
constexpr int kPydtnnOps = 55;
enum PydtnnOp {
  BACKWARD_CONVGEMM = 2,
  BACKWARD_DECONV_GEMM = 9,
  BACKWARD_IM2COL = 11,
  BACKWARD_RESHAPE_DW = 12,
  BACKWARD_SUM_BIASES = 15,
  BACKWARD_TRANSPOSE_DY = 16,
  BACKWARD_TRANSPOSE_W = 17,
  COMP_DW_MATMUL = 19,
  COMP_DX_COL2IM = 20,
  COMP_DX_MATMUL = 21,
  FORWARD_DEPTHWISE_CONV = 22,
  FORWARD_CONVGEMM = 25,
  FORWARD_CONVWINOGRAD = 26,
  FORWARD_CONVDIRECT = 27,
  FORWARD_IM2COL = 32,
  FORWARD_MATMUL = 33,
  FORWARD_RESHAPE_W = 35,
  FORWARD_SUM_BIASES = 37,
};
// dtnn's own operation codes (type 60000004), for phases PyDTNN has no code for: value = layer id * 16 + code.
constexpr int kDtnnOps = 16;

constexpr int P = kPydtnnOpsEvent, D = kDtnnOpsEvent;
// Indexed by OpCode.
constexpr OpInfo kOps[] = {
    {"?", "?", 0, 0},
    {"reshape_w", "forward_reshape_w", P, FORWARD_RESHAPE_W},
    {"im2row", "forward_im2col", P, FORWARD_IM2COL},
    {"im2col", "forward_im2col", P, FORWARD_IM2COL},
    {"gemm", "forward_matmul", P, FORWARD_MATMUL},
    {"bias", "forward_sum_biases", P, FORWARD_SUM_BIASES},
    {"convgemm", "forward_convgemm", P, FORWARD_CONVGEMM},
    {"winograd_transform_w", "forward_winograd_transform_w", D, 1},
    {"winograd", "forward_convwinograd", P, FORWARD_CONVWINOGRAD},
    {"direct", "forward_convdirect", P, FORWARD_CONVDIRECT},
    {"depthwise", "forward_depthwise_conv", P, FORWARD_DEPTHWISE_CONV},
    {"onednn", "forward_onednn", D, 2},
    {"transpose_w", "backward_transpose_w", P, BACKWARD_TRANSPOSE_W},
    {"gemm_dx", "comp_dx_matmul", P, COMP_DX_MATMUL},
    {"row2im", "comp_dx_col2im", P, COMP_DX_COL2IM},
    {"col2im", "comp_dx_col2im", P, COMP_DX_COL2IM},
    {"convgemm_dx", "backward_deconv_gemm", P, BACKWARD_DECONV_GEMM},
    {"winograd_transform_w", "backward_winograd_transform_w", D, 3},
    {"winograd_dx", "backward_convwinograd_dx", D, 4},
    {"direct_dx", "backward_convdirect_dx", D, 5},
    {"depthwise_dx", "backward_depthwise_conv_dx", D, 6},
    {"onednn_dx", "backward_onednn_dx", D, 7},
    {"im2row", "backward_im2col", P, BACKWARD_IM2COL},
    {"im2col", "backward_im2col", P, BACKWARD_IM2COL},
    {"transpose_dy", "backward_transpose_dy", P, BACKWARD_TRANSPOSE_DY},
    {"gemm_dw", "comp_dw_matmul", P, COMP_DW_MATMUL},
    {"convgemm_dw", "backward_convgemm", P, BACKWARD_CONVGEMM},
    {"winograd_dw", "backward_convwinograd_dw", D, 8},
    {"direct_dw", "backward_convdirect_dw", D, 9},
    {"depthwise_dw", "backward_depthwise_conv_dw", D, 10},
    {"onednn_dw", "backward_onednn_dw", D, 11},
    {"reshape_dw", "backward_reshape_dw", P, BACKWARD_RESHAPE_DW},
    {"bias", "backward_sum_biases", P, BACKWARD_SUM_BIASES},
    {"round_bf16", "forward_round_bf16", D, 12},
    {"round_bf16", "backward_round_bf16", D, 13},
    {"reorder_act", "forward_reorder_act", D, 14},
    {"reorder_act", "backward_reorder_act", D, 15},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(OpCode::count), "one entry per OpCode");

}  // namespace

const OpInfo& op_info(uint8_t op) { return op < static_cast<uint8_t>(OpCode::count) ? kOps[op] : kOps[0]; }
const OpInfo& op_info(OpCode op) { return op_info(static_cast<uint8_t>(op)); }

int op_events_of(int type) { return type == kPydtnnOpsEvent ? kPydtnnOps : type == kDtnnOpsEvent ? kDtnnOps : 0; }

}  // namespace dtnn
