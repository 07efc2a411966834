package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// credentials are the files the API server and its clients share, all generated per start into
// the state directory: a self-signed CA and serving certificate for 127.0.0.1, the service
// account signing key (the API server requires one even though no tokens are issued here) and
// one static bearer token for the user "planner" in group system:masters.
type credentials struct {
	ServingCertFile string
	ServingKeyFile  string
	CAData          []byte
	SAKeyFile       string
	SAPublicFile    string
	TokenFile       string
	Token           string
}

// writeCredentials generates the credentials into dir (created 0700, files 0600).
func writeCredentials(dir string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(loopbackHost, []net.IP{net.ParseIP(loopbackHost)}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	caPEM, err := lastCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	c := &credentials{
		ServingCertFile: filepath.Join(dir, "apiserver.crt"),
		ServingKeyFile:  filepath.Join(dir, "apiserver.key"),
		CAData:          caPEM,
		SAKeyFile:       filepath.Join(dir, "sa.key"),
		SAPublicFile:    filepath.Join(dir, "sa.pub"),
		TokenFile:       filepath.Join(dir, "tokens.csv"),
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	saPubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	c.Token = hex.EncodeToString(token)
	files := map[string][]byte{
		c.ServingCertFile:            certPEM,
		c.ServingKeyFile:             keyPEM,
		filepath.Join(dir, "ca.crt"): caPEM,
		c.SAKeyFile:                  saKeyPEM,
		c.SAPublicFile:               saPubPEM,
		c.TokenFile:                  []byte(c.Token + ",planner,planner,system:masters\n"),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// lastCertificate returns the last PEM certificate of a chain: GenerateSelfSignedCertKey writes
// the serving certificate followed by the CA that signed it.
func lastCertificate(chain []byte) ([]byte, error) {
	var last *pem.Block
	for rest := chain; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			last = block
		}
	}
	if last == nil {
		return nil, fmt.Errorf("no certificate in the generated chain")
	}
	return pem.EncodeToMemory(last), nil
}
