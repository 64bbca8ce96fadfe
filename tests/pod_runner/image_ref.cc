#include "tests/pod_runner/image_ref.h"

#include <cctype>

namespace ringmaster::testing {

namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool ValidTag(const std::string& s) {
  if (s.empty() || s.size() > 128 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

bool ValidDigest(const std::string& s) {
  const std::string prefix = "sha256:";
  if (s.rfind(prefix, 0) != 0 || s.size() != prefix.size() + 64) return false;
  for (size_t i = prefix.size(); i < s.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(s[i])) || std::isupper(static_cast<unsigned char>(s[i])))
      return false;
  }
  return true;
}

}  // namespace

StatusOr<ImageReference> ParseImageReference(const std::string& image) {
  if (image.empty()) return InvalidArgumentError("the container has no image");
  ImageReference ref;
  std::string rest = image;
  if (size_t at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (!ValidDigest(ref.digest)) {
      return InvalidArgumentError("image " + image + ": the digest is not sha256:<64 lowercase hex digits>");
    }
  }
  // A ':' before the last '/' is a registry's port; after it, the tag.
  const size_t slash = rest.rfind('/');
  std::string last = slash == std::string::npos ? rest : rest.substr(slash + 1);
  if (size_t colon = last.find(':'); colon != std::string::npos) {
    ref.tag = last.substr(colon + 1);
    last = last.substr(0, colon);
    if (!ValidTag(ref.tag)) return InvalidArgumentError("image " + image + ": invalid tag '" + ref.tag + "'");
  }
  if (!ValidName(last)) return InvalidArgumentError("image " + image + ": invalid name '" + last + "'");
  ref.name = last;
  if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
  return ref;
}

std::string ImageArchivePath(const std::string& image_dir, const ImageReference& ref) {
  return image_dir + "/" + ref.name + ".tar";
}

}  // namespace ringmaster::testing
