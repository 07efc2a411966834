package main

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in the kubeconfig this binary writes.
const contextName = "planner-controlplane"

// writeKubeconfig writes a kubeconfig for the API server at serverURL (CA-verified, bearer token)
// to path, 0600, through a temporary file so a reader never sees half of it.
func writeKubeconfig(path, serverURL string, creds *credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthorityData: creds.CAData}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{Token: creds.Token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// restConfig is the client configuration every component in this process uses: the same token,
// protobuf on the wire and no client-side rate limit (one process on loopback: the API server's
// own in-flight limits are the bound).
func restConfig(serverURL string, creds *credentials, userAgent string) *rest.Config {
	return &rest.Config{
		Host:            serverURL,
		BearerToken:     creds.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: creds.CAData},
		ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		QPS:             -1,
		UserAgent:       userAgent,
	}
}

// writeFileAtomic writes data to path (0600) via a temporary file in the same directory and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
