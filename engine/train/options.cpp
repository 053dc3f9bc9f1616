#include <sstream>

#include "train/options.h"

namespace dtnn {
namespace {

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
std::string str(bool v) { return v ? "True" : "False"; }

}  // namespace

std::string resolved_tensor_format(const TrainOptions& o) {
  if (o.tensor_format == "AUTO" || o.tensor_format == "auto") return o.enable_gpu ? "NCHW" : "NHWC";
  return o.tensor_format;
}

std::vector<std::pair<std::string, std::string>> options_list(const TrainOptions& o) {
  return {
      {"model", o.model_name},
      {"batch_size", std::to_string(o.batch_size)},
      {"num_epochs", std::to_string(o.num_epochs)},
      {"steps_per_epoch", std::to_string(o.steps_per_epoch)},
      {"evaluate", str(o.evaluate)},
      {"evaluate_only", str(o.evaluate_only)},
      {"evaluate_on_test", str(o.evaluate_on_test)},
      {"weights_and_bias_filename", o.weights_and_bias_filename},
      {"history_file", o.history_file},
      {"tensor_format", resolved_tensor_format(o)},
      {"conv_algo", o.conv_algo},
      {"enable_fused_bn_relu", str(o.enable_fused_bn_relu)},
      {"enable_fused_conv_relu", str(o.enable_fused_conv_relu)},
      {"enable_fused_conv_bn", str(o.enable_fused_conv_bn)},
      {"enable_fused_conv_bn_relu", str(o.enable_fused_conv_bn_relu)},
      {"enable_fused_add_relu", str(o.enable_fused_add_relu)},
      {"sync_batchnorm", str(o.sync_batchnorm)},
      {"dataset", o.dataset_name},
      {"use_synthetic_data", str(o.use_synthetic_data)},
      {"pad_to_cifar", str(o.pad_to_cifar)},
      {"dataset_train_path", o.dataset_train_path},
      {"dataset_test_path", o.dataset_test_path},
      {"test_as_validation", str(o.test_as_validation)},
      {"validation_split", str(o.validation_split)},
      {"flip_images", str(o.flip_images)},
      {"flip_images_prob", str(o.flip_images_prob)},
      {"crop_images", str(o.crop_images)},
      {"crop_images_prob", str(o.crop_images_prob)},
      {"crop_images_padding", std::to_string(o.crop_images_padding)},
      {"prefetch", str(o.prefetch)},
      {"optimizer", o.optimizer.name},
      {"learning_rate", str(o.optimizer.learning_rate)},
      {"learning_rate_scaling", str(o.learning_rate_scaling)},
      {"momentum", str(o.optimizer.momentum)},
      {"nesterov", str(o.optimizer.nesterov)},
      {"decay", str(o.optimizer.decay)},
      {"beta1", str(o.optimizer.beta1)},
      {"beta2", str(o.optimizer.beta2)},
      {"rho", str(o.optimizer.rho)},
      {"epsilon", str(o.optimizer.epsilon)},
      {"loss_func", o.loss_func},
      {"metrics", o.metrics},
      {"parallel", o.parallel},
      {"threads", std::to_string(o.threads)},
      {"enable_gpu", str(o.enable_gpu)},
      {"allow_tf32", str(o.allow_tf32)},
      {"enable_nccl", str(o.enable_nccl)},
      {"enable_cudnn_auto_conv_alg", str(o.enable_cudnn_auto_conv_alg)},
      {"gpu_layer_times", str(o.gpu_layer_times)},
      {"seed", std::to_string(o.seed)},
      {"report", o.report},
      {"lr_schedulers", o.lr_schedulers.names},
      {"warm_up_epochs", std::to_string(o.lr_schedulers.warm_up_epochs)},
      {"early_stopping_metric", o.lr_schedulers.early_stopping_metric},
      {"early_stopping_patience", std::to_string(o.lr_schedulers.early_stopping_patience)},
      {"early_stopping_weights_filename", o.lr_schedulers.early_stopping_weights_filename},
      {"reduce_lr_on_plateau_metric", o.lr_schedulers.reduce_lr_on_plateau_metric},
      {"reduce_lr_on_plateau_factor", str(o.lr_schedulers.reduce_lr_on_plateau_factor)},
      {"reduce_lr_on_plateau_patience", std::to_string(o.lr_schedulers.reduce_lr_on_plateau_patience)},
      {"reduce_lr_on_plateau_min_lr", str(o.lr_schedulers.reduce_lr_on_plateau_min_lr)},
      {"reduce_lr_every_nepochs_factor", str(o.lr_schedulers.reduce_lr_every_nepochs_factor)},
      {"reduce_lr_every_nepochs_nepochs", std::to_string(o.lr_schedulers.reduce_lr_every_nepochs_nepochs)},
      {"reduce_lr_every_nepochs_min_lr", str(o.lr_schedulers.reduce_lr_every_nepochs_min_lr)},
      {"stop_at_loss_metric", o.lr_schedulers.stop_at_loss_metric},
      {"stop_at_loss_threshold", str(o.lr_schedulers.stop_at_loss_threshold)},
      {"model_checkpoint_metric", o.lr_schedulers.model_checkpoint_metric},
      {"model_checkpoint_save_freq", std::to_string(o.lr_schedulers.model_checkpoint_save_freq)},
      {"checkpoint_file", o.checkpoint_file},
      {"resume_from", o.resume_from},
  };
}

}  // namespace dtnn
