// training_options.go — TrainingOptions: how a training session trains, one field per field of
// oneflow_training_options_t, and its conversion to the C struct.
package oneflow

// #include <stdlib.h>
// #include "oneflow_c.h"
import "C"

import "unsafe"

// Loss is the training loss (oneflow_loss_t).
type Loss int

const (
	LossModelOutput         Loss = C.ONEFLOW_LOSS_MODEL_OUTPUT          // the model computes it: set LossOutput
	LossMSE                 Loss = C.ONEFLOW_LOSS_MSE                   // mean((logits - labels)^2)
	LossL1                  Loss = C.ONEFLOW_LOSS_L1                    // mean(|logits - labels|)
	LossSoftmaxCrossEntropy Loss = C.ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY // logits [N, C], int64 labels [N]
)

// Optimizer is the update rule (oneflow_optimizer_t), each as its torch.optim namesake.
type Optimizer int

const (
	OptimizerSGD   Optimizer = C.ONEFLOW_OPTIMIZER_SGD
	OptimizerAdam  Optimizer = C.ONEFLOW_OPTIMIZER_ADAM
	OptimizerAdamW Optimizer = C.ONEFLOW_OPTIMIZER_ADAMW
)

// LRSchedule is the learning-rate schedule after the warm-up (oneflow_lr_schedule_t).
type LRSchedule int

const (
	LRConstant LRSchedule = C.ONEFLOW_LR_CONSTANT
	LRStep     LRSchedule = C.ONEFLOW_LR_STEP
	LRCosine   LRSchedule = C.ONEFLOW_LR_COSINE
)

// NonfinitePolicy says what Step does when a loss or gradient holds NaN/Inf.
type NonfinitePolicy int

const (
	NonfiniteSkip   NonfinitePolicy = C.ONEFLOW_NONFINITE_SKIP   // no update; Step reports applied = false
	NonfiniteRefuse NonfinitePolicy = C.ONEFLOW_NONFINITE_REFUSE // Step fails with ErrRuntime
)

// TrainingOptions maps 1:1 to oneflow_training_options_t (docs/training.md says what each field
// means). Start from DefaultTrainingOptions, which holds the engine's defaults; the engine validates
// the values when the session is created and names a bad field. Empty strings are passed as NULL.
type TrainingOptions struct {
	Loss             Loss
	LossOutput       string // LossModelOutput: the model output holding a one-element loss
	LogitsOutput     string // appended losses: the model output they read
	LabelsInput      string // appended losses: the name of the new labels input
	LossReductionSum bool   // appended losses: sum over the batch instead of the mean

	Optimizer    Optimizer
	LearningRate float32
	WeightDecay  float32
	Momentum     float32 // SGD
	Dampening    float32 // SGD
	Nesterov     bool    // SGD: needs Momentum > 0 and Dampening 0
	Beta1, Beta2 float32 // Adam, AdamW
	Eps          float32 // Adam, AdamW

	LRSchedule        LRSchedule
	WarmupSteps       int64
	WarmupStartFactor float32
	StepSize          int64   // LRStep
	Gamma             float32 // LRStep
	DecaySteps        int64   // LRCosine
	MinLRFactor       float32 // LRCosine

	MaxGradNorm float32  // global gradient-norm clipping; <= 0 disables it
	Frozen      []string // parameters kept fixed: names or globs ('*', '?')

	Deterministic           bool // needs an explicit WithIntraOpThreads
	Seed                    uint64
	NonfinitePolicy         NonfinitePolicy
	ActivationCheckpointing bool // recompute forward segments in backward: less memory
}

// DefaultTrainingOptions returns the engine's defaults (oneflow_training_options_init): Adam, lr 1e-3,
// softmax cross-entropy against a new "labels" input, constant schedule.
func DefaultTrainingOptions() TrainingOptions {
	var c C.oneflow_training_options_t
	C.oneflow_training_options_init_sized(&c, C.size_t(unsafe.Sizeof(c)))
	goString := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	return TrainingOptions{
		Loss: Loss(c.loss), LossOutput: goString(c.loss_output), LogitsOutput: goString(c.logits_output),
		LabelsInput: goString(c.labels_input), LossReductionSum: c.loss_reduction_sum != 0,
		Optimizer: Optimizer(c.optimizer), LearningRate: float32(c.learning_rate),
		WeightDecay: float32(c.weight_decay), Momentum: float32(c.momentum), Dampening: float32(c.dampening),
		Nesterov: c.nesterov != 0, Beta1: float32(c.beta1), Beta2: float32(c.beta2), Eps: float32(c.eps),
		LRSchedule: LRSchedule(c.lr_schedule), WarmupSteps: int64(c.warmup_steps),
		WarmupStartFactor: float32(c.warmup_start_factor), StepSize: int64(c.step_size), Gamma: float32(c.gamma),
		DecaySteps: int64(c.decay_steps), MinLRFactor: float32(c.min_lr_factor), MaxGradNorm: float32(c.max_grad_norm),
		Deterministic: c.deterministic != 0, Seed: uint64(c.seed), NonfinitePolicy: NonfinitePolicy(c.nonfinite_policy),
		ActivationCheckpointing: c.activation_checkpointing != 0,
	}
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// toC fills c from o. Strings and the frozen array live in C memory (cgo forbids Go memory holding Go
// pointers being passed to C); free releases them after the create call.
func (o *TrainingOptions) toC(c *C.oneflow_training_options_t) (free func(), err error) {
	var allocs []unsafe.Pointer
	free = func() {
		for _, p := range allocs {
			C.free(p)
		}
	}
	str := func(s, what string) (*C.char, error) {
		if s == "" {
			return nil, nil
		}
		p, err := cString(s, what)
		if err == nil {
			allocs = append(allocs, unsafe.Pointer(p))
		}
		return p, err
	}
	C.oneflow_training_options_init_sized(c, C.size_t(unsafe.Sizeof(*c)))
	if c.loss_output, err = str(o.LossOutput, "LossOutput"); err == nil {
		if c.logits_output, err = str(o.LogitsOutput, "LogitsOutput"); err == nil {
			c.labels_input, err = str(o.LabelsInput, "LabelsInput")
		}
	}
	if err == nil && len(o.Frozen) > 0 {
		arr := (**C.char)(C.malloc(C.size_t(len(o.Frozen)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		allocs = append(allocs, unsafe.Pointer(arr))
		names := unsafe.Slice(arr, len(o.Frozen))
		for i, f := range o.Frozen {
			if names[i], err = str(f, "Frozen pattern"); err != nil {
				break
			}
		}
		c.frozen = arr
		c.num_frozen = C.size_t(len(o.Frozen))
	}
	if err != nil {
		free()
		return nil, err
	}
	c.loss = C.oneflow_loss_t(o.Loss)
	c.loss_reduction_sum = cBool(o.LossReductionSum)
	c.optimizer = C.oneflow_optimizer_t(o.Optimizer)
	c.learning_rate = C.float(o.LearningRate)
	c.weight_decay = C.float(o.WeightDecay)
	c.momentum = C.float(o.Momentum)
	c.dampening = C.float(o.Dampening)
	c.nesterov = cBool(o.Nesterov)
	c.beta1, c.beta2, c.eps = C.float(o.Beta1), C.float(o.Beta2), C.float(o.Eps)
	c.lr_schedule = C.oneflow_lr_schedule_t(o.LRSchedule)
	c.warmup_steps = C.int64_t(o.WarmupSteps)
	c.warmup_start_factor = C.float(o.WarmupStartFactor)
	c.step_size = C.int64_t(o.StepSize)
	c.gamma = C.float(o.Gamma)
	c.decay_steps = C.int64_t(o.DecaySteps)
	c.min_lr_factor = C.float(o.MinLRFactor)
	c.max_grad_norm = C.float(o.MaxGradNorm)
	c.deterministic = cBool(o.Deterministic)
	c.seed = C.uint64_t(o.Seed)
	c.nonfinite_policy = C.oneflow_nonfinite_policy_t(o.NonfinitePolicy)
	c.activation_checkpointing = cBool(o.ActivationCheckpointing)
	return free, nil
}
