package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/toolbus/toolbus/toolkit"
)

// The client side of the MCP conformance suite: the suite starts a test
// server per scenario and runs a client command against it. The command
// here is this test binary re-executed with testServerEnv=conformance-
// client (conformanceClientMain): toolbus's own MCP client, as a worker
// uses it (Client.Register into a Toolkit, calls through the Toolkit,
// server requests answered by the caller through toolkit.Ask).

// TestConformanceClient runs every client scenario the suite lists against
// toolbus's MCP client: all pass but those in
// testdata/conformance-client-expected-failures.txt, which must fail.
func TestConformanceClient(t *testing.T) {
	node, suite := conformanceSuite(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	expected := expectedFailures(t, "testdata/conformance-client-expected-failures.txt")
	scenarios := clientScenarios(t, node, suite)
	for name := range expected {
		if !slices.Contains(scenarios, name) {
			t.Errorf("expected failure %q is not a client scenario of the suite", name)
		}
	}
	for _, scenario := range scenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "client", "--command", exe, "--scenario", scenario, "-o", t.TempDir())
			cmd.Env = append(os.Environ(), testServerEnv+"=conformance-client",
				"PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("the suite did not finish: %v\n%s", ctx.Err(), out)
			}
			// "Passed: 3/3, 0 failed, 0 warnings"
			m := regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`).FindSubmatch(out)
			passed := m != nil && string(m[1]) != "0" && (string(m[3]) == "0" || onlyLate(out))
			if why, ok := expected[scenario]; ok {
				if passed {
					t.Fatalf("scenario %s passes: remove it from the expected failures (%s):\n%s", scenario, why, out)
				}
				t.Logf("fails as expected: %s", why)
				return
			}
			if !passed {
				t.Fatalf("scenario %s did not pass (%v):\n%s", scenario, err, out)
			}
			if string(m[3]) != "0" {
				// The one timing check: a reconnect that came over twice
				// the SSE retry late, which a busy machine can cause.
				t.Logf("scenario %s: a reconnect came late (a busy machine?):\n%s", scenario, out)
			}
		})
	}
}

// clientScenarios are the client scenarios `conformance list` names.
func clientScenarios(t *testing.T, node, suite string) []string {
	out, err := exec.Command(node, suite, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	_, client, ok := strings.Cut(string(out), "Client scenarios")
	if !ok {
		t.Fatalf("conformance list names no client scenarios:\n%s", out)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- (\S+)`).FindAllStringSubmatch(client, -1) {
		names = append(names, m[1])
	}
	if len(names) < 4 {
		t.Fatalf("conformance list names %d client scenarios:\n%s", len(names), out)
	}
	return names
}

// expectedFailures reads a file of "scenario reason" lines (# comments).
func expectedFailures(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, _ := strings.Cut(line, " ")
		if strings.TrimSpace(why) == "" {
			t.Fatalf("%s: %q has no reason", path, name)
		}
		m[name] = strings.TrimSpace(why)
	}
	return m
}

// conformanceClientMain is the client command of TestConformanceClient:
// it mounts the server at the URL (its last argument) as a worker would
// and does what the scenario (MCP_CONFORMANCE_SCENARIO) asks.
func conformanceClientMain() int {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-client URL")
		return 2
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := conformanceClient(ctx, url, scenario); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		return 1
	}
	return 0
}

func conformanceClient(ctx context.Context, url, scenario string) error {
	cfg, opts := ServerConfig{Name: "server", Transport: TransportStreamableHTTP, URL: url}, (*Options)(nil)
	if strings.HasPrefix(scenario, "auth/") {
		// A mounted server with oauth: as configured by an operator; the
		// suite's authorization server sends the browser straight back,
		// so the "person" is an HTTP GET that reads the redirect.
		cfg.OAuth = &OAuthConfig{ClientMetadataURL: "https://conformance-test.local/client-metadata.json", RedirectURL: "http://localhost:3000/callback"}
		var cc struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
			IdPClientID  string `json:"idp_client_id"`
			IdPIssuer    string `json:"idp_issuer"`
			IdPIDToken   string `json:"idp_id_token"`
		}
		_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc)
		cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = cc.ClientID, cc.ClientSecret
		opts = &Options{AuthorizationCodeFetcher: followRedirect}
		switch {
		case strings.HasPrefix(scenario, "auth/client-credentials-"):
			cfg.OAuth = &OAuthConfig{Grant: GrantClientCredentials, ClientID: cc.ClientID, ClientSecret: cc.ClientSecret}
		case cc.IdPIssuer != "":
			// Cross-app access: the suite gives the person's ID token, as
			// toolctl mcp login would have stored it after their sign-in.
			cfg.OAuth = &OAuthConfig{Grant: GrantEnterprise, ClientID: cc.ClientID, ClientSecret: cc.ClientSecret,
				IdPIssuer: cc.IdPIssuer, IdPClientID: cc.IdPClientID}
			opts.Grants = MemoryGrants()
			if _, err := opts.Grants.Save(ctx, cfg.Name, &Grant{URL: url, IDToken: cc.IdPIDToken}, 0); err != nil {
				return err
			}
		}
	}
	c, err := NewClient(cfg, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	tk := toolkit.New(nil)
	if err := c.Register(ctx, tk); err != nil {
		return err
	}
	var tool string
	var input map[string]any
	switch scenario {
	case "initialize":
		return nil // connected and listed the tools
	case "tools_call":
		tool, input = "add_numbers", map[string]any{"a": 5, "b": 3}
	case "elicitation-sep1034-client-defaults":
		tool = "test_client_elicitation_defaults"
	case "sse-retry":
		tool = "test_reconnection"
	default:
		if strings.HasPrefix(scenario, "auth/") {
			tool = "test-tool"
			break
		}
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	final := tk.Dispatch(ctx, toolkit.ToolCall{Name: ToolName("server", tool), Input: input}, acceptingCaller{})
	if final.State != toolkit.StateSuccess {
		return fmt.Errorf("%s: %s %s: %s", tool, final.State, final.Code, final.Text())
	}
	return nil
}

// followRedirect is the "browser" of the auth scenarios: the suite's
// authorization server redirects at once to the redirect URL with the code.
func followRedirect(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := neturl.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("the authorization server's redirect: %w", err)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// acceptingCaller is a caller that accepts every elicitation with no
// content of its own (the go-sdk's client fills in the schema's
// defaults).
type acceptingCaller struct{ toolkit.WriterFuncs }

func (acceptingCaller) Ask(_ context.Context, method string, params any) (any, error) {
	if method != toolkit.MethodElicit {
		return nil, toolkit.ErrCannotAsk
	}
	b, _ := json.Marshal(params)
	if !strings.Contains(string(b), "requestedSchema") {
		return nil, fmt.Errorf("an elicitation without a schema: %s", b)
	}
	return map[string]any{"action": "accept", "content": map[string]any{}}, nil
}

// onlyLate reports whether the suite's only failed check is
// client-sse-retry-timing for a reconnect that came very late.
func onlyLate(out []byte) bool {
	failed := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "FAILURE") {
			failed++
			if !strings.Contains(line, "client-sse-retry-timing") {
				return false
			}
		}
	}
	return failed == 1 && strings.Contains(string(out), "reconnected very late")
}
