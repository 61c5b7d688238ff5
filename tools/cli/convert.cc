// `oneflow convert IN OUT`: ONNX <-> native (.ofm); the output format comes from OUT's extension.
#include <cstdio>

#include "cli.h"
#include "progress.h"
#include "serialize/model_io.h"

namespace oneflow {
namespace cli {

int ConvertCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("convert", args, {"external-data"}, {"no-checksums"});
  if (a.positionals.size() != 2) throw UsageError("'oneflow convert' takes IN and OUT paths");
  const std::string& in = a.positionals[0];
  const std::string& out = a.positionals[1];
  const ModelFormat out_format = FormatFromExtension(out);
  if (out_format == ModelFormat::kAuto)
    throw UsageError("cannot tell the output format of '" + out + "': use the extension .ofm (native) or .onnx");
  if (a.Has("external-data") && out_format != ModelFormat::kNative)
    throw UsageError("--external-data applies to native (.ofm) output only");
  const ModelFormat in_format = SniffFileFormat(in);
  // The model is converted as stored: no validation or defaults are added, so a model this build
  // cannot run still converts, and loading either file yields the same graph.
  ModelLoadOptions load;
  load.validate = false;
  Progress progress("convert: loading " + in, 0);  // shown only for models that take a while
  Graph g = LoadModelFile(in, load);
  progress.Phase("convert: writing " + out, 0);
  NativeWriteOptions options;
  options.external_data_file = a.Get("external-data");
  options.checksums = !a.Has("no-checksums");
  options.source_format = ModelFormatName(in_format);
  SaveModel(g, out, out_format, options);
  progress.Finish();
  std::printf("converted %s (%s) -> %s (%s)\n", in.c_str(), ModelFormatName(in_format), out.c_str(),
              ModelFormatName(out_format));
  return 0;
}

}  // namespace cli
}  // namespace oneflow
