// promql-names parses PromQL expressions with Prometheus' own parser and prints what each one selects, so that a
// test can check a dashboard's queries against the metrics the project registers. Input: one JSON string (an
// expression) per line on stdin. Output: one JSON array per expression of its vector selectors, each
// {"name": <metric name, "" when the selector names none>, "labels": [<label names it matches on>]}. A parse
// error ends the program with status 1 and the expression and the error on stderr.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type selector struct {
	Name   string   `json:"name"`
	Labels []string `json:"labels"`
}

func selectors(expr parser.Expr) []selector {
	found := []selector{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vector, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		one := selector{Name: vector.Name, Labels: []string{}}
		for _, matcher := range vector.LabelMatchers {
			if matcher.Name != labels.MetricName {
				one.Labels = append(one.Labels, matcher.Name)
			} else if one.Name == "" && matcher.Type == labels.MatchEqual {
				one.Name = matcher.Value
			}
		}
		found = append(found, one)
		return nil
	})
	return found
}

func main() {
	promql := parser.NewParser(parser.Options{})
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for lines.Scan() {
		var text string
		if err := json.Unmarshal(lines.Bytes(), &text); err != nil {
			fmt.Fprintf(os.Stderr, "not a JSON string: %s\n", lines.Text())
			os.Exit(2)
		}
		expr, err := promql.ParseExpr(text)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", text, err)
			os.Exit(1)
		}
		if err := out.Encode(selectors(expr)); err != nil {
			panic(err)
		}
	}
	if err := lines.Err(); err != nil {
		panic(err)
	}
}
