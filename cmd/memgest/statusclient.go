package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/memgest/memgest/server"
)

// statusClient fetches a node's /status: over HTTPS when it has a CA to
// trust, with the cluster's password (HTTP basic auth) when it has one.
type statusClient struct {
	addr     string // host:port of the node's HTTP port
	caFile   string
	password string
	client   *http.Client
}

// newStatusClient checks the CA file, if any, and returns the client.
func newStatusClient(addr, caFile, password string) (*statusClient, error) {
	c := &statusClient{addr: addr, caFile: caFile, password: password, client: http.DefaultClient}
	if caFile == "" {
		return c, nil
	}
	tc, err := trustingCA(caFile)
	if err != nil {
		return nil, err
	}
	c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	return c, nil
}

// trustingCA is a TLS client configuration that trusts the CA in caFile
// (PEM), as the nodes' certificates are checked against it.
func trustingCA(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

// url is the node's /status address.
func (c *statusClient) url() string {
	if c.caFile != "" {
		return "https://" + c.addr + "/status"
	}
	return "http://" + c.addr + "/status"
}

// fetch gets and decodes the status, within five seconds.
func (c *statusClient) fetch() (server.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(), nil)
	if err != nil {
		return server.Status{}, err
	}
	if c.password != "" {
		req.SetBasicAuth("default", c.password)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return server.Status{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return server.Status{}, errors.New("the cluster has a password: give it with --pass (or REDISCLI_AUTH)")
	default:
		return server.Status{}, fmt.Errorf("%s answered %s", c.url(), resp.Status)
	}
	var st server.Status
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// devState is what a running `memgest dev` leaves for `memgest status` to
// find its cluster without being told the ports: one file per dev cluster,
// removed when it stops.
type devState struct {
	PID      int       `json:"pid"`       // the `memgest dev` process
	BasePort int       `json:"base_port"` // node 1's client port
	HTTP     string    `json:"http"`      // node 1's HTTP address
	CAFile   string    `json:"ca_file,omitempty"`
	Password string    `json:"password,omitempty"`
	Started  time.Time `json:"started"`
}

// devStateDir is where dev clusters leave their state: the user's cache
// directory, else the temporary one.
func devStateDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "memgest", "dev")
}

// write records s, readable by the owner only (it may hold the password),
// and returns a function that removes it.
func (s devState) write() (func(), error) {
	dir := devStateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "base-"+strconv.Itoa(s.BasePort)+".json")
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

// liveDevStates lists the dev clusters whose `memgest dev` still runs,
// newest first, and removes the files of those that are gone.
func liveDevStates() []devState {
	files, _ := filepath.Glob(filepath.Join(devStateDir(), "base-*.json"))
	var out []devState
	for _, f := range files {
		var s devState
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &s) != nil || !processAlive(s.PID) {
			os.Remove(f)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out
}

// processAlive says whether a process with this pid exists.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
