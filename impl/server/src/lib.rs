//! tc-server: the MCP server on rmcp (dispatch, confirmation round trips, transports).
