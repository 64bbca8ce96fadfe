#include "tests/pod_runner/pod_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api/names.h"
#include "base/json_path.h"
#include "kube/api_error.h"
#include "kube/base64.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "tests/pod_runner/container_env.h"
#include "tests/pod_runner/local_process.h"

namespace ringmaster::testing {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kCompletedLabel[] = "pod-container-completed.stage.kwok.x-k8s.io";
constexpr char kFailedLabel[] = "pod-container-running-failed.stage.kwok.x-k8s.io";
constexpr char kExitCodeAnnotation[] = "pod-container-running-failed.stage.kwok.x-k8s.io/exit-code";
constexpr char kNodeNotReadyLabel[] = "node-not-ready.stage.kwok.x-k8s.io";
// How long an exit's report is retried (every tick) before it counts as an error. A kubelet retries
// its status updates for as long as it runs; minutes cover a control-plane outage: an etcd outage made
// one PATCH hang for the client's 30 s timeout, and a 30 s deadline then dropped the report for good.
constexpr auto kReportDeadline = std::chrono::minutes(5);

bool HasDeletion(const json& obj) { return obj.contains("metadata") && obj["metadata"].contains("deletionTimestamp"); }

// Why a node cannot run pods ("" when it can): the chaos label, or a Ready condition that is not True.
std::string NodeTrouble(const json& node) {
  if (StringAt(node, {"metadata", "labels", kNodeNotReadyLabel}) == "true") return "NotReady (chaos label)";
  for (const auto& c : node.value("status", json::object()).value("conditions", json::array())) {
    if (StringAt(c, {"type"}) == "Ready" && StringAt(c, {"status"}) != "True") return "NotReady";
  }
  return "";
}

std::string ShortUid(const std::string& uid) { return uid.substr(0, 8); }

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

}  // namespace

struct PodRunner::Proc {
  RunnerProcess info;
  Subprocess process;
  bool report_due = false;  // exited by itself; not reported yet
  Clock::time_point exited_at;
};

// A pod whose start failed so far (retried every tick until start_timeout).
struct PodRunner::Pending {
  std::string pod, uid;
  Clock::time_point first_failure;
  std::string last_error;
  bool given_up = false;
};

PodRunner::PodRunner(PodRunnerOptions options) : options_(std::move(options)), started_at_(Clock::now()) {}

StatusOr<std::unique_ptr<PodRunner>> PodRunner::Start(PodRunnerOptions options) {
  if (options.kubeconfig.empty() || options.ns.empty() || options.job.empty() || options.bin_dir.empty() ||
      options.work_dir.empty()) {
    return InvalidArgumentError("PodRunner needs kubeconfig, ns, job, bin_dir and work_dir");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.work_dir, ec);
  if (ec) return FailedPreconditionError("cannot create " + options.work_dir + ": " + ec.message());
  std::unique_ptr<PodRunner> runner(new PodRunner(std::move(options)));
  const PodRunnerOptions& o = runner->options_;

  RINGMASTER_ASSIGN_OR_RETURN(kube::ClientConfig config, kube::LoadKubeconfigFiles(o.kubeconfig));
  runner->server_ = config.server;
  runner->ca_pem_ = config.ca_pem;
  PodRunner* self = runner.get();
  LogSink log = [self](LogLevel, std::string_view line) { self->Log("client: " + std::string(line)); };
  RINGMASTER_ASSIGN_OR_RETURN(runner->client_, kube::NewClient(config, nullptr, log));
  kube::InformerOptions po;
  po.ns = o.ns;
  po.label_selector = std::string(api::kJobNameLabel) + "=" + o.job;
  po.watch_timeout_seconds = 60;
  po.log = log;
  runner->pods_ = std::make_unique<kube::Informer>(runner->client_, kube::resources::Pods(), po);
  kube::InformerOptions no;
  no.watch_timeout_seconds = 60;
  no.log = log;
  runner->nodes_ = std::make_unique<kube::Informer>(runner->client_, kube::resources::Nodes(), no);
  runner->pods_->Start();
  runner->nodes_->Start();
  for (kube::Informer* informer : {runner->pods_.get(), runner->nodes_.get()}) {
    if (!informer->WaitForSync(o.sync_timeout)) {
      runner->Stop();
      return DeadlineExceededError("PodRunner: the pod and node caches did not sync within " +
                                   std::to_string(o.sync_timeout.count()) + " s (is the apiserver up?)");
    }
  }
  runner->Log("running the pods of job " + o.ns + "/" + o.job + " as local processes from " + o.bin_dir + " (logs in " +
              o.work_dir + ")");
  runner->thread_ = std::thread([self] { self->Run(); });
  return runner;
}

PodRunner::~PodRunner() { Stop(); }

void PodRunner::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& p : procs_) {
      if (!p->info.running) continue;
      p->info.running = false;
      p->info.exit_code = p->process.Kill().ShellCode();
      p->info.killed_for = "the pod runner stopped";
    }
  }
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
}

void PodRunner::Log(const std::string& line) {
  char prefix[48];
  std::snprintf(prefix, sizeof(prefix), "[pod-runner %7.3fs] ",
                std::chrono::duration<double>(Clock::now() - started_at_).count());
  std::string text = prefix + line;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    lines_.push_back(text);
  }
  if (options_.log) {
    options_.log(LogLevel::kInfo, text);
  } else {
    text += "\n";
    (void)!::write(STDERR_FILENO, text.data(), text.size());
  }
}

void PodRunner::Run() {
  while (!stopping_) {
    Tick();
    std::this_thread::sleep_for(options_.poll_interval);
  }
}

void PodRunner::Tick() {
  std::vector<json> pods, nodes;
  for (const auto& p : pods_->store().List()) pods.push_back(*p);
  for (const auto& n : nodes_->store().List()) nodes.push_back(*n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    KillAndReapLocked(pods, nodes);
  }
  ReportExits();

  std::map<std::string, const json*> node_by_name;
  for (const auto& n : nodes) node_by_name[StringAt(n, {"metadata", "name"})] = &n;
  for (const auto& pod : pods) {
    const std::string name = StringAt(pod, {"metadata", "name"}), uid = StringAt(pod, {"metadata", "uid"});
    const std::string ip = StringAt(pod, {"status", "podIP"}), node = StringAt(pod, {"spec", "nodeName"});
    if (StringAt(pod, {"status", "phase"}) != "Running" || HasDeletion(pod) || node.empty() ||
        ip.rfind(options_.pod_ip_prefix, 0) != 0) {
      continue;
    }
    if (!StringAt(pod, {"metadata", "labels", kCompletedLabel}).empty() ||
        !StringAt(pod, {"metadata", "labels", kFailedLabel}).empty()) {
      continue;  // already reported (or failed by a test through the chaos label directly)
    }
    auto n = node_by_name.find(node);
    if (n == node_by_name.end() || !NodeTrouble(*n->second).empty()) continue;  // a lost node runs nothing
    Pending* pending = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool known = false;
      for (const auto& p : procs_) known |= p->info.uid == uid;
      if (known) continue;
      for (auto& p : pending_)
        if (p->uid == uid) pending = p.get();
      if (pending && pending->given_up) continue;
    }
    Status started = StartPod(pod);
    if (started.ok()) continue;
    // A pod that no retry can start (no command, an unsupported env source) fails at once.
    const bool permanent =
        started.code() == StatusCode::kInvalidArgument || started.code() == StatusCode::kUnimplemented;
    std::string error;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending == nullptr) {
        pending_.push_back(std::make_unique<Pending>(Pending{name, uid, Clock::now(), "", false}));
        pending = pending_.back().get();
        if (!permanent) {
          Log(name + " (uid " + ShortUid(uid) + ") cannot start yet (retrying for " +
              std::to_string(options_.start_timeout.count()) + " s): " + started.ToString());
        }
      }
      pending->last_error = started.ToString();
      if (!permanent && Clock::now() - pending->first_failure < options_.start_timeout) continue;
      pending->given_up = true;
      error = name + " (uid " + ShortUid(uid) + ") could not start" +
              (permanent ? "" : " within " + std::to_string(options_.start_timeout.count()) + " s") + ": " +
              pending->last_error;
      errors_.push_back(error);
    }
    Log(error + "; reporting it failed (exit code 128)");
    Status reported = ReportExit(name, uid, 128);
    if (!reported.ok()) Log("cannot report " + name + " failed: " + reported.ToString());
  }
}

void PodRunner::KillAndReapLocked(const std::vector<json>& pods, const std::vector<json>& nodes) {
  std::map<std::string, const json*> pod_by_uid, node_by_name;
  std::map<std::string, bool> name_exists;
  for (const auto& p : pods) {
    pod_by_uid[StringAt(p, {"metadata", "uid"})] = &p;
    name_exists[StringAt(p, {"metadata", "name"})] = true;
  }
  for (const auto& n : nodes) node_by_name[StringAt(n, {"metadata", "name"})] = &n;
  // Why a process of this pod must not run (""when it may).
  auto trouble = [&](const RunnerProcess& p) -> std::string {
    auto pod = pod_by_uid.find(p.uid);
    auto node = node_by_name.find(p.node);
    if (pod == pod_by_uid.end())
      return name_exists.count(p.pod) ? "its pod was replaced by a new one" : "its pod was deleted";
    if (HasDeletion(*pod->second)) return "its pod is being deleted";
    if (node == node_by_name.end()) return "its node " + p.node + " is gone (lost)";
    if (std::string t = NodeTrouble(*node->second); !t.empty()) return "its node " + p.node + " is " + t + " (lost)";
    return "";
  };
  for (auto& proc : procs_) {
    RunnerProcess& p = proc->info;
    if (!p.running) continue;
    // Reap first: a process that exited by itself is reported even if its pod goes at the same time.
    if (std::optional<ExitStatus> exit = proc->process.Poll()) {
      p.running = false;
      p.exit_code = exit->ShellCode();
      proc->exited_at = Clock::now();
      proc->report_due = p.killed_for.empty();
      const std::string how =
          exit->exited() ? "exited " + std::to_string(exit->code) : "died of signal " + std::to_string(exit->signal);
      const std::string who = p.pod + (p.container.empty() ? "" : "/" + p.container) + " (uid " + ShortUid(p.uid) +
                              ", pid " + std::to_string(p.pid) + ") ";
      Log(who + how + (p.killed_for.empty() ? "" : ": killed because " + p.killed_for + "; not reported"));
      continue;
    }
    if (!p.killed_for.empty()) continue;  // SIGKILLed already; reaped on a later tick
    std::string why = trouble(p);
    if (why.empty()) continue;
    (void)proc->process.SignalGroup(SIGKILL);  // reaped on a later tick
    p.killed_for = why;
    Log("killing " + p.pod + " (uid " + ShortUid(p.uid) + ", pid " + std::to_string(p.pid) + "): " + why);
  }
}

void PodRunner::ReportExits() {
  struct Due {
    std::string pod, uid;
    int code;
  };
  std::vector<Due> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : procs_) {
      if (p->report_due) due.push_back({p->info.pod, p->info.uid, p->info.exit_code});
    }
  }
  for (const auto& d : due) {
    Status s = ReportExit(d.pod, d.uid, d.code);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& p : procs_) {
      if (p->info.uid != d.uid) continue;
      const bool gone = kube::IsNotFound(s) || kube::IsConflict(s) || s.code() == StatusCode::kInvalidArgument;
      if (s.ok()) {
        p->report_due = false;
        p->info.reported = true;
      } else if (gone || Clock::now() - p->exited_at > kReportDeadline) {
        p->report_due = false;
        if (!gone) errors_.push_back("could not report the exit of " + d.pod + ": " + s.ToString());
      }
    }
    if (s.ok()) {
      Log("reported " + d.pod +
          (d.code == 0 ? " completed (KWOK: Succeeded)"
                       : " failed with exit code " + std::to_string(d.code) + " (KWOK: Failed)"));
    } else {
      Log("reporting the exit of " + d.pod + " failed: " + s.ToString());
    }
  }
}

Status PodRunner::ReportExit(const std::string& pod, const std::string& uid, int exit_code) {
  // The uid in the patch is a precondition: a replacement pod of the same name is never labelled.
  json patch = {{"metadata", {{"uid", uid}, {"labels", {{exit_code == 0 ? kCompletedLabel : kFailedLabel, "true"}}}}}};
  if (exit_code != 0) patch["metadata"]["annotations"] = {{kExitCodeAnnotation, std::to_string(exit_code)}};
  return client_->Patch(kube::resources::Pods(), options_.ns, pod, kube::PatchType::kMerge, patch).status();
}

Status PodRunner::StartPod(const json& pod) {
  const std::string name = StringAt(pod, {"metadata", "name"}), uid = StringAt(pod, {"metadata", "uid"});
  const std::string node = StringAt(pod, {"spec", "nodeName"}), ip = StringAt(pod, {"status", "podIP"});
  const json& containers = pod["spec"]["containers"];
  if (!containers.is_array() || containers.empty()) return InvalidArgumentError(name + " has no containers");
  const json& container = containers[0];

  KeyLookup lookup = [this](const std::string& kind, const std::string& object,
                            const std::string& key) -> StatusOr<std::string> {
    const bool secret = kind == "Secret";
    RINGMASTER_ASSIGN_OR_RETURN(
        json got,
        client_->Get(secret ? kube::resources::Secrets() : kube::resources::ConfigMaps(), options_.ns, object));
    const json& data = got.value("data", json::object());
    if (!data.contains(key) || !data[key].is_string()) return NotFoundError(kind + " " + object + " has no key " + key);
    if (!secret) return data[key].get<std::string>();
    return kube::Base64Decode(data[key].get<std::string>());
  };
  RINGMASTER_ASSIGN_OR_RETURN(EnvList env, ResolveContainerEnv(pod, container, lookup));
  RINGMASTER_ASSIGN_OR_RETURN(std::vector<std::string> argv, ContainerCommand(container, env));
  const std::string binary = options_.bin_dir + "/" + std::filesystem::path(argv[0]).filename().string();
  if (::access(binary.c_str(), X_OK) != 0) {
    return NotFoundError("command " + argv[0] + " of " + name + " is not an executable in " + options_.bin_dir);
  }

  // The pod's service-account token, bound to the pod (the kubelet's projected token).
  std::string sa = StringAt(pod, {"spec", "serviceAccountName"});
  if (sa.empty()) sa = "default";
  kube::TokenRequestOptions to;
  to.bound_kind = "Pod";
  to.bound_name = name;
  to.bound_uid = uid;
  RINGMASTER_ASSIGN_OR_RETURN(std::string token, client_->CreateToken(options_.ns, sa, to));

  const std::string base = options_.work_dir + "/" + name + "." + ShortUid(uid);
  const std::string home = base + ".home", log_file = base + ".log", kubeconfig = home + "/kubeconfig";
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  if (ec) return InternalError("cannot create " + home + ": " + ec.message());
  std::string user = options_.ns + "/" + sa;
  RINGMASTER_RETURN_IF_ERROR(WriteFileWithMode(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters:\n- name: cluster\n  cluster:\n    server: " + server_ +
          "\n    certificate-authority-data: " + kube::Base64Encode(ca_pem_) + "\nusers:\n- name: " + user +
          "\n  user:\n    token: " + token + "\ncontexts:\n- name: pod\n  context:\n    cluster: cluster\n    user: " +
          user + "\n    namespace: " + options_.ns + "\ncurrent-context: pod\n",
      0600));

  // Only what a container would have: no variable of the test process leaks in. The bin dir stands for the
  // image's own PATH entries: a command there may start another (ringmaster-launch starts the trainer).
  const char* path = std::getenv("PATH");
  EnvList full = {{"PATH", (options_.bin_dir.empty() ? "" : options_.bin_dir + ":") +
                               (path ? path : "/usr/local/bin:/usr/bin:/bin")},
                  {"HOME", home},
                  {"HOSTNAME", name},
                  {"KUBECONFIG", kubeconfig}};
  for (const auto& [k, v] : env) {
    bool replaced = false;
    for (auto& [fk, fv] : full)
      if (fk == k) fv = v, replaced = true;
    if (!replaced) full.emplace_back(k, v);
  }
  std::string cwd = StringAt(container, {"workingDir"});
  if (cwd.empty()) cwd = home;
  RINGMASTER_ASSIGN_OR_RETURN(Subprocess process, SpawnLocalProcess({binary, argv, full, cwd, log_file}));
  const pid_t pid = process.pid();

  auto proc = std::make_unique<Proc>();
  proc->info =
      RunnerProcess{name, uid, node, ip, StringAt(container, {"name"}), pid, true, -1, "", false, log_file, kubeconfig};
  proc->process = std::move(process);
  {
    std::lock_guard<std::mutex> lock(mu_);
    procs_.push_back(std::move(proc));
  }
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  Log("started " + name + " (uid " + ShortUid(uid) + ") on " + node + " at " + ip + " as pid " + std::to_string(pid) +
      " (service account " + sa + "): " + cmd);
  return Status::Ok();
}

std::vector<RunnerProcess> PodRunner::Processes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RunnerProcess> out;
  for (const auto& p : procs_) out.push_back(p->info);
  return out;
}

Status PodRunner::Signal(const std::string& pod, int signal) {
  std::lock_guard<std::mutex> lock(mu_);
  bool found = false;
  Status result = Status::Ok();
  for (auto& p : procs_) {
    if (p->info.pod != pod || !p->info.running) continue;
    found = true;
    Status s = p->process.Signal(signal);  // refused once reaped: the pid may have been reused
    if (!s.ok()) result = s;
  }
  if (!found) return NotFoundError("no running process for pod " + pod);
  return result;
}

std::vector<std::string> PodRunner::Errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

std::string PodRunner::Describe(size_t tail_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "---- pod runner ----\n";
  {
    std::lock_guard<std::mutex> log_lock(log_mu_);
    for (const auto& l : lines_) out += l + "\n";
  }
  for (const auto& p : procs_) {
    out += "---- " + p->info.pod + (p->info.container.empty() ? "" : "/" + p->info.container) + " (uid " +
           ShortUid(p->info.uid) + "): " + p->info.log_file + " ----\n" + Tail(p->info.log_file, tail_bytes) + "\n";
  }
  return out;
}

}  // namespace ringmaster::testing
