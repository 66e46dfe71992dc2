package config

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memory.retention_days = 12,169,727 wrapped to about ten minutes and
// purged a whole archive at start. It is at most 100 years (36,500 days).
func TestValidateRetentionDaysEdges(t *testing.T) {
	for _, tc := range []struct {
		days int
		want string // "" = valid
	}{
		{0, ""}, {1, ""}, {365, ""}, {MaxRetentionDays, ""},
		{-1, "memory.retention_days: must be at least 0, got -1"},
		{MaxRetentionDays + 1, "memory.retention_days: must be at most 36500, got 36501"},
		{12169727, "memory.retention_days: must be at most 36500, got 12169727"},
		{math.MaxInt, "memory.retention_days: must be at most 36500"},
	} {
		c := Default()
		c.Memory.RetentionDays = tc.days
		err := c.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("retention_days %d: Validate() = %v, want %q", tc.days, err, tc.want)
		}
	}
}

// llm.temperature = NaN passed validation (NaN fails every comparison) and
// failed every turn.
func TestValidateTemperatureNotANumber(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.0001, 2.0001} {
		c := Default()
		c.LLM.Temperature = x
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "llm.temperature: must be between 0 and 2") {
			t.Errorf("temperature %v: Validate() = %v", x, err)
		}
	}
}

// Every number and duration key, set from the environment to a value no
// one means (the largest int, NaN, infinity, a negative duration), is
// refused at start with a message naming the key: none reaches the code
// that would overflow, allocate by it or send it to the LLM.
func TestLoadRejectsHostileNumbersNamingTheKey(t *testing.T) {
	hostile := map[reflect.Type][]string{
		reflect.TypeFor[int]():           {strconv.Itoa(math.MaxInt), strconv.Itoa(math.MinInt), "99999999999999999999"},
		reflect.TypeFor[float64]():       {"NaN", "Inf", "-Inf", "1e309"},
		reflect.TypeFor[time.Duration](): {"-1s", "9999999999h", "10"},
	}
	checked := 0
	def := reflect.ValueOf(Default())
	for _, l := range leaves() {
		for _, val := range hostile[def.FieldByIndex(l.index).Type()] {
			t.Run(l.key+"="+val, func(t *testing.T) {
				isolateEnv(t)
				t.Setenv(envName(l.key), val)
				_, err := Load("")
				if err == nil || !strings.Contains(err.Error(), l.key) {
					t.Errorf("%s=%s: Load() = %v, want an error naming %s", envName(l.key), val, err, l.key)
				}
			})
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("only %d hostile values checked: the key list is not walked", checked)
	}
}
