// Op family: ai.oneflow Boxing, the node a plan inserts where a producer's SBP differs from what
// its consumer needs: a collective (all-reduce, all-gather, reduce-scatter, all-to-all) or a
// local transform (slice, zero-fill, zero-pad). Its output shape is fixed by the plan.
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

void RegisterBoxingOps(OpRegistry& r) {
  r.Register(OpSchema(op::kBoxing, kOneflowDomain).Since(1).Input("X").Output("Y")
                 .RequiredAttr("mode", AttrKind::kString)   // all_reduce, all_gather, reduce_scatter,
                                                            // all_to_all, slice, zero_fill, zero_pad
                 .RequiredAttr("shape", AttrKind::kInts)    // the local output shape on this rank
                 .Attr("comm", Attribute::String(""))       // communicator key (collectives)
                 .Attr("group", Attribute::Ints({}))        // global ranks of the collective, in order
                 .Attr("axis", Attribute::Int(0))           // tensor axis gathered / scattered / split to
                 .Attr("in_axis", Attribute::Int(0))        // all_to_all: the axis split on input
                 .Attr("sizes", Attribute::Ints({}))        // per member: extent along `axis`
                 .Attr("in_sizes", Attribute::Ints({}))     // all_to_all, per member: extent along `in_axis`
                 .Attr("starts", Attribute::Ints({}))       // slice / zero_pad: block offset per dim
                 .Attr("keep", Attribute::Int(1))           // zero_fill: 1 keeps the value, 0 writes zeros
                 .Infer([](InferContext& ctx) {
                   ctx.set_output(0, TensorType::Of(ctx.input_dtype(0), ctx.attrs().GetInts("shape")));
                 }));
}

}  // namespace oneflow
