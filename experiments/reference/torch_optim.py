"""dtnn's (PyDTNN's) update rules as torch optimizers, so that the reference trains with the optimizer dtnn
trains with (engine/optim/optimizer.cpp), not PyTorch's variants of it:

- Adam: epsilon inside the square root, w -= lr * (decay * w + m_hat / sqrt(v_hat + eps)); PyTorch's Adam
  adds eps outside it, which with eps = 1e-7 acts like about 3e-4 inside (parameters with small gradients
  took steps near lr in PyTorch, a few percent of it in dtnn). --nesterov gives dtnn's nadam numerator
  (m + (1 - beta1) g) * c1 (torch.optim.Adam ignored it).
- weight decay (--decay) is dtnn's and PyDTNN's: decay * w joins the step, outside the momentum buffer and
  Adam's moments (PyTorch's weight_decay adds it to the gradient, so with momentum 0.9 it acts about 10x
  stronger).
- SGD: v = mu v + g; w -= lr * (decay * w + v), or + g + mu v with --nesterov. Without decay this is
  torch.optim.SGD's rule (dampening 0), which build_optimizer then uses for its speed.
"""
import torch


class DtnnAdam(torch.optim.Optimizer):
    def __init__(self, params, lr, betas, eps, decay, nesterov=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, decay=decay, nesterov=nesterov))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            ps = [p for p in group["params"] if p.grad is not None]
            if not ps:
                continue
            b1, b2 = group["betas"]
            gs, ms, vs = [p.grad for p in ps], [], []
            for p in ps:
                st = self.state[p]
                if not st:
                    st["step"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                st["step"] += 1
                ms.append(st["m"])
                vs.append(st["v"])
            t = self.state[ps[0]]["step"]
            c1, c2 = 1.0 / (1.0 - b1 ** t), 1.0 / (1.0 - b2 ** t)
            torch._foreach_mul_(ms, b1)
            torch._foreach_add_(ms, gs, alpha=1.0 - b1)
            torch._foreach_mul_(vs, b2)
            torch._foreach_addcmul_(vs, gs, gs, value=1.0 - b2)
            denom = torch._foreach_mul(vs, c2)
            torch._foreach_add_(denom, group["eps"])
            torch._foreach_sqrt_(denom)
            num = torch._foreach_add(ms, gs, alpha=1.0 - b1) if group["nesterov"] else list(ms)
            num = torch._foreach_mul(num, c1)
            update = torch._foreach_div(num, denom)
            if group["decay"]:
                torch._foreach_add_(update, ps, alpha=group["decay"])
            torch._foreach_add_(ps, update, alpha=-group["lr"])


class DtnnSGD(torch.optim.Optimizer):
    """SGD with dtnn's weight decay (outside the velocity); build_optimizer uses it only with --decay > 0."""

    def __init__(self, params, lr, momentum, decay, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, decay=decay, nesterov=nesterov))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            mu = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if "velocity" not in st:
                    st["velocity"] = torch.zeros_like(p)
                v = st["velocity"]
                v.mul_(mu).add_(p.grad)
                update = p.grad.add(v, alpha=mu) if group["nesterov"] else v.clone()
                update.add_(p, alpha=group["decay"])
                p.sub_(update, alpha=group["lr"])


def build_optimizer(args, params):
    """The optimizer dtnn builds for these options (--optimizer sgd|adam)."""
    if args.optimizer == "sgd":
        if args.decay == 0:
            return torch.optim.SGD(params, lr=args.learning_rate, momentum=args.momentum, nesterov=args.nesterov)
        return DtnnSGD(params, lr=args.learning_rate, momentum=args.momentum, decay=args.decay,
                       nesterov=args.nesterov)
    return DtnnAdam(params, lr=args.learning_rate, betas=(args.beta1, args.beta2), eps=args.epsilon,
                    decay=args.decay, nesterov=args.nesterov)
