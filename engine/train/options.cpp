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

std::vector<std::pair<std::string, std::string>> options_list(const TrainOptions& o) {
  return {
      {"model", o.model_name},
      {"batch_size", std::to_string(o.batch_size)},
      {"num_epochs", std::to_string(o.num_epochs)},
      {"steps_per_epoch", std::to_string(o.steps_per_epoch)},
      {"evaluate", str(o.evaluate)},
      {"evaluate_only", str(o.evaluate_only)},
      {"weights_and_bias_filename", o.weights_and_bias_filename},
      {"history_file", o.history_file},
      {"tensor_format", o.tensor_format},
      {"conv_algo", o.conv_algo},
      {"dataset", o.dataset_name},
      {"use_synthetic_data", str(o.use_synthetic_data)},
      {"dataset_train_path", o.dataset_train_path},
      {"dataset_test_path", o.dataset_test_path},
      {"test_as_validation", str(o.test_as_validation)},
      {"validation_split", str(o.validation_split)},
      {"optimizer", o.optimizer.name},
      {"learning_rate", str(o.optimizer.learning_rate)},
      {"learning_rate_scaling", str(o.learning_rate_scaling)},
      {"momentum", str(o.optimizer.momentum)},
      {"nesterov", str(o.optimizer.nesterov)},
      {"decay", str(o.optimizer.decay)},
      {"beta1", str(o.optimizer.beta1)},
      {"beta2", str(o.optimizer.beta2)},
      {"epsilon", str(o.optimizer.epsilon)},
      {"loss_func", o.loss_func},
      {"metrics", o.metrics},
      {"parallel", o.parallel},
      {"threads", std::to_string(o.threads)},
      {"enable_gpu", str(o.enable_gpu)},
      {"seed", std::to_string(o.seed)},
      {"report", o.report},
  };
}

}  // namespace dtnn
