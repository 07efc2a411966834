package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// etcdServer is the embedded store: one etcd member on 127.0.0.1, its data in the state directory.
type etcdServer struct {
	etcd       *embed.Etcd
	ClientURL  string
	ClientPort int
}

// startEtcd starts etcd in dataDir on free loopback ports and waits until it serves. Durability is
// traded for speed (no fsync): the control plane is throwaway, its state dies with it.
func startEtcd(dataDir string, timeout time.Duration) (*etcdServer, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ { // a free port can be taken between the probe and the bind
		server, err := startEtcdOnce(dataDir, timeout)
		if err == nil {
			return server, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("embedded etcd: %w", lastErr)
}

func startEtcdOnce(dataDir string, timeout time.Duration) (*etcdServer, error) {
	clientPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: loopbackHost + ":" + strconv.Itoa(clientPort)}
	peerURL := url.URL{Scheme: "http", Host: loopbackHost + ":" + strconv.Itoa(peerPort)}
	cfg := embed.NewConfig()
	cfg.Name = "planner"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = 8 << 30
	cfg.MaxRequestBytes = 10 << 20
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return &etcdServer{etcd: e, ClientURL: clientURL.String(), ClientPort: clientPort}, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("not ready within %s", timeout)
	}
}

// Close stops etcd.
func (s *etcdServer) Close() {
	if s != nil && s.etcd != nil {
		s.etcd.Close()
	}
}
