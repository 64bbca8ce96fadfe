#include "tests/pod_runner/oci_image.h"

#include <sys/stat.h>

#include "base/json_path.h"
#include "tests/pod_runner/image_ref.h"
#include "tests/pod_runner/tar_reader.h"

namespace ringmaster::testing {

using json = nlohmann::json;

namespace {

constexpr char kRefName[] = "org.opencontainers.image.ref.name";

StatusOr<std::vector<std::string>> Strings(const json& config, const char* key) {
  const json& v = At(config, {key});
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (!v.is_array()) return InvalidArgumentError(std::string("image config ") + key + " is not a list");
  for (const auto& s : v) {
    if (!s.is_string()) return InvalidArgumentError(std::string("image config ") + key + " holds a non-string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

StatusOr<json> ReadJson(const std::string& archive, const std::string& member) {
  RINGMASTER_ASSIGN_OR_RETURN(std::string text, ReadTarMember(archive, member));
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return DataLossError(archive + ": " + member + " is not a JSON object");
  return doc;
}

std::string BlobPath(const std::string& digest) {
  const size_t colon = digest.find(':');
  return colon == std::string::npos ? "" : "blobs/" + digest.substr(0, colon) + "/" + digest.substr(colon + 1);
}

}  // namespace

StatusOr<ImageConfig> ParseImageConfig(const json& doc) {
  const json& config = At(doc, {"config"});
  ImageConfig c;
  if (config.is_null()) return c;
  if (!config.is_object()) return InvalidArgumentError("image config: config is not an object");
  RINGMASTER_ASSIGN_OR_RETURN(c.entrypoint, Strings(config, "Entrypoint"));
  RINGMASTER_ASSIGN_OR_RETURN(c.cmd, Strings(config, "Cmd"));
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<std::string> env, Strings(config, "Env"));
  for (const auto& e : env) {
    const size_t eq = e.find('=');
    if (eq == std::string::npos) return InvalidArgumentError("image config Env entry without '=': " + e);
    c.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  c.working_dir = StringAt(config, {"WorkingDir"});
  c.user = StringAt(config, {"User"});
  const json& labels = At(config, {"Labels"});
  if (!labels.is_null() && !labels.is_object()) return InvalidArgumentError("image config: Labels is not an object");
  if (labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (!v.is_string()) return InvalidArgumentError("image config: label " + k + " is not a string");
      c.labels[k] = v.get<std::string>();
    }
  }
  return c;
}

StatusOr<LocalImage> FindLocalImage(const std::string& image_dir, const std::string& image) {
  RINGMASTER_ASSIGN_OR_RETURN(ImageReference ref, ParseImageReference(image));
  LocalImage out;
  out.reference = image;
  out.archive = ImageArchivePath(image_dir, ref);
  const std::string not_found = "image " + image + " not found in " + image_dir + ": ";
  struct stat st{};
  if (::stat(out.archive.c_str(), &st) != 0) {
    return NotFoundError(not_found + "no archive " + ref.name + ".tar (the pod runner never pulls)");
  }
  StatusOr<json> index = ReadJson(out.archive, "index.json");
  if (!index.ok())
    return DataLossError(not_found + out.archive + " is not an OCI archive: " + index.status().message());
  std::string tags;
  const json* chosen = nullptr;
  const json& manifests = At(*index, {"manifests"});
  if (manifests.is_array()) {
    for (const auto& m : manifests) {
      const std::string tag = StringAt(m, {"annotations", kRefName}), digest = StringAt(m, {"digest"});
      tags += (tags.empty() ? "" : ", ") + (tag.empty() ? digest : tag);
      if ((ref.tag.empty() || tag == ref.tag) && (ref.digest.empty() || digest == ref.digest)) {
        chosen = &m;
        break;
      }
    }
  }
  if (chosen == nullptr) {
    return NotFoundError(not_found + out.archive + " has no manifest" + (ref.tag.empty() ? "" : " tagged " + ref.tag) +
                         (ref.digest.empty() ? "" : " with digest " + ref.digest) +
                         " (it has: " + (tags.empty() ? "none" : tags) + ")");
  }
  out.tag = StringAt(*chosen, {"annotations", kRefName});
  out.manifest_digest = StringAt(*chosen, {"digest"});
  if (StringAt(*chosen, {"mediaType"}) == "application/vnd.oci.image.index.v1+json") {
    return UnimplementedError("image " + image + ": a multi-platform index is not supported by the pod runner");
  }
  if (out.tag.empty()) {
    return UnimplementedError("image " + image + ": its manifest has no tag (" + kRefName + "), which unpacking needs");
  }
  RINGMASTER_ASSIGN_OR_RETURN(json manifest, ReadJson(out.archive, BlobPath(out.manifest_digest)));
  const std::string config_digest = StringAt(manifest, {"config", "digest"});
  if (config_digest.empty())
    return DataLossError(out.archive + ": manifest " + out.manifest_digest + " names no config");
  RINGMASTER_ASSIGN_OR_RETURN(json config, ReadJson(out.archive, BlobPath(config_digest)));
  StatusOr<ImageConfig> parsed = ParseImageConfig(config);
  if (!parsed.ok()) return parsed.status().WithContext("image " + image);
  out.config = std::move(parsed).value();
  return out;
}

}  // namespace ringmaster::testing
