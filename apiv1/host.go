package apiv1

import (
	"encoding/json"
	"time"
)

// RedeemRequest is the body of POST /api/v1/fleet/enrollments/redeem: a
// machine's one-time code and the share it lends.
type RedeemRequest struct {
	Code     string          `json:"code"`
	CPUs     float64         `json:"cpus"`
	MemoryGB float64         `json:"memory_gb"`
	GPUs     int             `json:"gpus"`
	Hostname string          `json:"hostname,omitempty"`
	Profile  json.RawMessage `json:"profile,omitempty"` // measured, e.g. {"single_core_score": 1.1}
}

// RedeemResponse answers a redeemed code (201). Credential is shown only
// this once; the host keeps it (mode 0600) and sends it as its bearer
// token on the host protocol (/agent/v1/...), never on /api/v1.
type RedeemResponse struct {
	HostID      string   `json:"host_id"`
	Name        string   `json:"name"`
	Credential  string   `json:"credential"`
	WorkKinds   []string `json:"work_kinds"`
	RatePercent int      `json:"rate_percent"`
	CPUs        float64  `json:"cpus"`
	MemoryGB    float64  `json:"memory_gb"`
	GPUs        int      `json:"gpus"`
}

// HostView is an enrolled host as operators see it (admin only): the
// public API never names a host.
type HostView struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	State           string          `json:"state"` // active, draining, removed
	WorkKinds       []string        `json:"work_kinds"`
	RatePercent     int             `json:"rate_percent"`
	CPUs            float64         `json:"cpus"`
	MemoryGB        float64         `json:"memory_gb"`
	GPUs            int             `json:"gpus"`
	Hostname        string          `json:"hostname"`
	Profile         json.RawMessage `json:"profile"`
	RunningAttempts int             `json:"running_attempts"`
	EnrolledAt      time.Time       `json:"enrolled_at"`
	LastSeenAt      *time.Time      `json:"last_seen_at"` // null until it first registered
}

// HostList answers GET /api/v1/admin/hosts.
type HostList struct {
	Hosts []HostView `json:"hosts"`
}
