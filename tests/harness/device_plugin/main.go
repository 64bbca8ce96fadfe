// ringmaster-emulated-device-plugin: advertises emulated GPUs as nvidia.com/gpu to one kubelet through the
// kubelet's device-plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), as NVIDIA's device plugin does
// for real ones, so that GPU scheduling, allocation and the runtime's NCCL path meet on a real kubelet.
//
// EMULATION: there is no GPU behind these devices. Each allocation hands the container what NVIDIA's plugin
// hands it under its environment-variable strategy -- NVIDIA_VISIBLE_DEVICES, the allocated devices' ids --
// and RINGMASTER_EMULATED_GPUS, the count, which makes the runtime load the CPU emulation of CUDA and NCCL
// (tests/gpu_emulation) with that many GPUs, numbered 0.. as the container would see its real ones.
//
//	ringmaster-emulated-device-plugin --kubelet-dir DIR --node NAME --gpus N
//
// DIR is the kubelet's device-plugins directory (kubelet.sock lives there). The plugin serves its own socket
// there, registers, and registers again whenever the kubelet restarts (its socket is recreated, which deletes
// ours). It exits on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const resourceName = "nvidia.com/gpu"

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	devices []*pluginapi.Device
	ids     map[string]bool
	stop    chan struct{}
}

func newPlugin(node string, gpus int) *plugin {
	p := &plugin{ids: map[string]bool{}, stop: make(chan struct{})}
	for i := 0; i < gpus; i++ {
		id := fmt.Sprintf("GPU-emulated-%s-%d", node, i)
		p.devices = append(p.devices, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
		p.ids[id] = true
	}
	return p
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the device list once and keeps the stream open: emulated devices never turn unhealthy.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	select {
	case <-p.stop:
	case <-stream.Context().Done():
	}
	return nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		for _, id := range c.DevicesIds {
			if !p.ids[id] {
				return nil, fmt.Errorf("allocate: unknown device %q (this plugin advertises %d emulated GPUs)", id, len(p.ids))
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES":   strings.Join(c.DevicesIds, ","),
				"RINGMASTER_EMULATED_GPUS": strconv.Itoa(len(c.DevicesIds)),
			},
		})
		log.Printf("allocated %s", strings.Join(c.DevicesIds, ","))
	}
	return resp, nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// serve listens on DIR/<endpoint> and registers with the kubelet; it returns when the socket is gone (the
// kubelet restarted and cleared its directory) or on stop.
func serve(dir, endpoint string, p *plugin, stop <-chan os.Signal) (stopped bool, err error) {
	sock := filepath.Join(dir, endpoint)
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return false, fmt.Errorf("listen on %s: %w", sock, err)
	}
	server := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(lis) }()
	defer server.Stop()

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, fmt.Errorf("connect to the kubelet: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resourceName,
	})
	if err != nil {
		return false, fmt.Errorf("register with the kubelet: %w", err)
	}
	log.Printf("registered %d emulated %s with the kubelet (%s)", len(p.devices), resourceName, sock)
	for {
		select {
		case <-stop:
			return true, nil
		case <-time.After(time.Second):
			if _, err := os.Stat(sock); err != nil {
				log.Printf("%s is gone (the kubelet restarted): registering again", sock)
				return false, nil
			}
		}
	}
}

func main() {
	dir := flag.String("kubelet-dir", "", "the kubelet's device-plugins directory (holds kubelet.sock)")
	node := flag.String("node", "", "the node's name (in the device ids)")
	gpus := flag.Int("gpus", 8, "how many emulated GPUs to advertise")
	flag.Parse()
	if *dir == "" || *node == "" || *gpus < 0 {
		fmt.Fprintln(os.Stderr, "usage: ringmaster-emulated-device-plugin --kubelet-dir DIR --node NAME --gpus N")
		os.Exit(2)
	}
	log.SetPrefix("emulated-device-plugin: ")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	p := newPlugin(*node, *gpus)
	for {
		stopped, err := serve(*dir, "ringmaster-emulated-gpu.sock", p, stop)
		if stopped {
			close(p.stop)
			return
		}
		if err != nil {
			log.Printf("%v; retrying in 1 s", err)
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}
