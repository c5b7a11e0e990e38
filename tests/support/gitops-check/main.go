// gitops-check: how the GitOps tools' own code judges mcpexec objects.
//
// Reads one JSON document on stdin: {"objects": [...], "argo": {"<group>/<kind>": "<health.lua>"},
// "flux": [<Flux healthCheckExprs entries>]}, and prints one verdict per object on stdout:
// kstatus (sigs.k8s.io/cli-utils, what `kubectl`-side tooling and Config Sync use), fluxKstatus (Flux's fork,
// what kustomize-controller uses without healthCheckExprs), flux (Flux's CEL StatusEvaluator with the given
// expressions), argo (the health Lua run in gopher-lua with the libraries Argo CD opens: package, base, table and
// a safe os). Used by the cluster tests on objects the real operator and gateway wrote.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	fluxstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	luajson "layeh.com/gopher-json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type input struct {
	Objects []json.RawMessage             `json:"objects"`
	Argo    map[string]string             `json:"argo"`
	Flux    []kustomize.CustomHealthCheck `json:"flux"`
}

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

type output struct {
	Kstatus     verdict `json:"kstatus"`
	FluxKstatus verdict `json:"fluxKstatus"`
	Flux        verdict `json:"flux"`
	Argo        verdict `json:"argo"`
}

func kstatus(u *unstructured.Unstructured) verdict {
	res, err := status.Compute(u)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Status: res.Status.String(), Message: res.Message}
}

func fluxKstatus(u *unstructured.Unstructured) verdict {
	res, err := fluxstatus.Compute(u)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Status: res.Status.String(), Message: res.Message}
}

func flux(evaluators map[string]*fluxcel.StatusEvaluator, u *unstructured.Unstructured) verdict {
	evaluator, ok := evaluators[u.GetAPIVersion()+"/"+u.GetKind()]
	if !ok {
		return verdict{Error: "no healthCheckExprs for " + u.GetAPIVersion() + "/" + u.GetKind()}
	}
	res, err := evaluator.Evaluate(context.Background(), u)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Status: res.Status.String(), Message: res.Message}
}

// argo runs a health script as Argo CD's VM.runLua does: SkipOpenLibs, then package, base, table and a safe os
// (here only os.time and os.clock, which is what a health script may reach), `obj` decoded from the object, a
// one-second budget, and the returned table read as {status, message}.
func argo(scripts map[string]string, u *unstructured.Unstructured) verdict {
	script, ok := scripts[u.GroupVersionKind().Group+"/"+u.GetKind()]
	if !ok {
		return verdict{Error: "no health.lua for " + u.GroupVersionKind().Group + "/" + u.GetKind()}
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	safeOs := l.NewTable()
	safeOs.RawSetString("time", l.NewFunction(func(s *lua.LState) int { s.Push(lua.LNumber(time.Now().Unix())); return 1 }))
	l.SetGlobal(lua.OsLibName, safeOs)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, u.Object))
	if err := l.DoString(script); err != nil {
		return verdict{Error: err.Error()}
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return verdict{Error: fmt.Sprintf("health.lua returned %s, not a table", l.Get(-1).Type())}
	}
	encoded, err := luajson.Encode(table)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	var health verdict
	if err := json.Unmarshal(encoded, &health); err != nil {
		return verdict{Error: err.Error()}
	}
	switch health.Status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
		return health
	}
	return verdict{Status: "Unknown", Message: "invalid health status " + health.Status}
}

// luaValue converts an object as Argo CD's controller holds it (integers as int64, from the API server's JSON) into
// Lua values, as Argo CD's own decodeValue does: numbers of every Go kind become Lua numbers. (gopher-json's
// DecodeValue knows only float64 and would turn every integer, observedGeneration included, into nil.)
func luaValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(luaValue(l, item))
		}
		return table
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), luaValue(l, item))
		}
		return table
	}
	return lua.LNil
}

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "reading input:", err)
		os.Exit(2)
	}
	evaluators := map[string]*fluxcel.StatusEvaluator{}
	for _, check := range in.Flux {
		evaluator, err := fluxcel.NewStatusEvaluator(&check.HealthCheckExpressions)
		if err != nil {
			fmt.Fprintf(os.Stderr, "healthCheckExprs for %s/%s: %v\n", check.APIVersion, check.Kind, err)
			os.Exit(2)
		}
		evaluators[check.APIVersion+"/"+check.Kind] = evaluator
	}
	out := make([]output, 0, len(in.Objects))
	for _, raw := range in.Objects {
		// Integers as int64, as the tools see objects read from the API server.
		object := map[string]any{}
		if err := utiljson.Unmarshal(raw, &object); err != nil {
			fmt.Fprintln(os.Stderr, "reading an object:", err)
			os.Exit(2)
		}
		u := &unstructured.Unstructured{Object: object}
		out = append(out, output{Kstatus: kstatus(u), FluxKstatus: fluxKstatus(u), Flux: flux(evaluators, u), Argo: argo(in.Argo, u)})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "writing output:", err)
		os.Exit(2)
	}
}
