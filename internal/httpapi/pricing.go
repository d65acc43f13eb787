package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/apiv1"
	"github.com/skiffhq/skiff/internal/billing"
)

// ratesMarker is where docs/pricing.md takes the live rate tables.
const ratesMarker = "<!-- skiff:rates -->"

// presets answers GET /api/v1/presets: the operator's presets at the
// current rates.
func (s *Server) presets(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, s.views.PresetList())
	return nil
}

// rateTables renders the unit rates and the presets as markdown tables.
func rateTables(l apiv1.PresetList) string {
	var b strings.Builder
	p := l.Pricing
	markup := withMarkup
	fmt.Fprintf(&b, "| unit | market USD per hour | billed USD per hour (market + %d%%) |\n|---|---|---|\n", p.MarkupPercent)
	for _, u := range []struct {
		name string
		usd  apiv1.USD
	}{{"CPU core", p.MarketRates.CPUCoreHourUSD}, {"GiB of memory", p.MarketRates.MemoryGBHourUSD}, {"GPU", p.MarketRates.GPUHourUSD}} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", u.name, u.usd, markup(u.usd))
	}
	fmt.Fprintf(&b, "\nPlacement `dedicated` costs %d%% of `shared`. Attempts are metered per second, at least %d s each.\n\n",
		p.DedicatedPercent, p.MinBilledSeconds)
	if len(l.Presets) == 0 {
		b.WriteString("This server offers no presets; give `requirements` instead.\n")
		return b.String()
	}
	b.WriteString("| preset | cpu | memory_mb | gpu_count | market USD per hour | billed USD per hour | dedicated USD per hour | least one attempt costs (60 s) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, pr := range l.Presets {
		rq := pr.Requirements
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %s | %s | %s | %s |\n", pr.Name,
			strconv.FormatFloat(*rq.CPU, 'f', -1, 64), *rq.MemoryMB, *rq.GPUCount,
			pr.MarketRateUSDPerHour, pr.RateUSDPerHour, pr.DedicatedRateUSDPerHour, pr.MinimumAttemptUSD)
	}
	return b.String()
}

// withMarkup is a market rate with the service markup, rounded up to a
// micro-USD, as tasks are billed.
func withMarkup(market apiv1.USD) apiv1.USD {
	return apiv1.USD((int64(market)*(100+billing.MarkupPercent) + 99) / 100)
}
