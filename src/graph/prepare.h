// Validation of a graph: schema resolution and type/shape inference. Loaders end with PrepareGraph
// (serialize/model_io.h), so a graph from a file is already prepared; code that builds or rewrites
// graphs calls these directly. Optimization passes live a layer up, in passes/.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace oneflow {

// Resolves each node's schema for its opset (errors name op, domain and opset), checks input and
// output counts, attribute kinds and required attributes, and fills attribute defaults.
void ResolveSchemas(Graph& g);
// The same for one node (used when a pass appends nodes, e.g. autodiff).
void ResolveNodeSchema(Node& n);

// Static type and shape inference over the whole graph (symbolic dims allowed). Types declared by
// the model are kept where inference learns less.
void InferShapes(Graph& g);
// Infers the output types of one node whose schema is resolved and whose inputs are typed.
void InferNodeTypes(Graph& g, const Node& n);

// ResolveSchemas then InferShapes: what every graph goes through before passes, plans or sessions.
void PrepareGraph(Graph& g);

// Appends a node `op`(inputs) -> a new value `out` under the graph's default-domain opset, with its
// schema resolved and output typed (for code that builds nodes: losses, autodiff, pipeline cuts).
// The node is named `node_name`, or `out` when that is empty. Returns the new value's id.
int AppendTypedNode(Graph& g, const std::string& op, std::vector<int> inputs, const std::string& out,
                    AttrMap attrs = {}, const std::string& node_name = "");

}  // namespace oneflow
