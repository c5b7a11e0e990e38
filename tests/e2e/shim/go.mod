module mcpexec.local/e2e-shim

go 1.22
