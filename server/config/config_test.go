package config

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Bind = "localhost" }, "not an IP"},
		{func(c *Config) { c.Bind = "0.0.0.0" }, "--advertise"},
		{func(c *Config) { c.Port = 70000 }, "port 70000"},
		{func(c *Config) { c.PeerPort = c.Port }, "must differ"},
		{func(c *Config) { c.DataDir = "" }, "data-dir"},
		{func(c *Config) { c.BootstrapExpect = 0 }, "--join"},
		{func(c *Config) { c.Join = "nohostport" }, "join"},
		{func(c *Config) { c.Voters = 2 }, "voters"},
		{func(c *Config) { c.MaxValueSize = 1 << 40 }, "max-value-size"},
		{func(c *Config) { c.MaxMemory = -1 }, "maxmemory"},
		{func(c *Config) { c.MaxArgs = 1 }, "max-args"},
		{func(c *Config) { c.MaxClients = 0 }, "maxclients"},
		{func(c *Config) { c.PeerTimeout = 0 }, "peer-timeout"},
		{func(c *Config) { c.LogLevel = "loud" }, "log-level"},
		{func(c *Config) { c.RebuildRate = -1 }, "rebuild-rate"},
		{func(c *Config) { c.RebuildShare = 0 }, "rebuild-share"},
		{func(c *Config) { c.RebuildShare = 1.5 }, "rebuild-share"},
		{func(c *Config) { c.MigrateShare = 0 }, "migrate-share"},
		{func(c *Config) { c.MigrateShare = -0.5 }, "migrate-share"},
		{func(c *Config) { c.ScrubRate = -1 }, "scrub-rate"},
		{func(c *Config) { c.CompactRate = -1 }, "compact-rate"},
		{func(c *Config) { c.CompactShare = 0 }, "compact-share"},
		{func(c *Config) { c.CompactShare = 1.5 }, "compact-share"},
	} {
		c := Default()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
}

func TestProtectedMode(t *testing.T) {
	c := Default()
	c.Bind, c.Advertise = "0.0.0.0", "10.0.0.1"
	if !c.ProtectedRefuses("10.0.0.2:5000", c.RequirePass != "") {
		t.Fatal("remote client served without a password on a public bind")
	}
	if c.ProtectedRefuses("127.0.0.1:5000", false) || c.ProtectedRefuses("[::1]:5000", false) {
		t.Fatal("loopback client refused")
	}
	c.RequirePass = "x"
	if c.ProtectedRefuses("10.0.0.2:5000", c.RequirePass != "") {
		t.Fatal("refused although a password is set")
	}
	c.RequirePass, c.ProtectedMode = "", false
	if c.ProtectedRefuses("10.0.0.2:5000", c.RequirePass != "") {
		t.Fatal("refused with protected mode off")
	}
	c.ProtectedMode, c.Bind = true, "127.0.0.1"
	if c.ProtectedRefuses("10.0.0.2:5000", c.RequirePass != "") {
		t.Fatal("loopback bind refuses (nothing remote can reach it anyway)")
	}
}
