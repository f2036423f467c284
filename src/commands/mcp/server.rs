//! The MCP side (rmcp): the server's description and tool list, and each
//! `tools/call` handed to the thread that holds the store. The protocol runs
//! on a one-thread tokio runtime of its own; the store is used only from
//! the command's thread, one call at a time, so a call never blocks the
//! protocol's runtime and no database handle crosses threads.

use std::sync::mpsc;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::call::Call;
use super::tools::ToolName;

/// A call waiting for the store's thread, and where its result goes.
pub struct Job {
    pub call: Call,
    pub reply: tokio::sync::oneshot::Sender<rmcp::model::CallToolResult>,
}

/// What the agent is told the server is for.
const INSTRUCTIONS: &str = "agentcron schedules tasks that a person confirmed. Draft a task \
    with `draft`; it runs only after the person confirms it with a one-time code agentcron \
    sends them. You cannot confirm, resume, trigger or delete tasks. Tell the person what the \
    `draft` result says to tell them.";

#[derive(Clone)]
pub struct Server {
    tools: Arc<Vec<Tool>>,
    jobs: mpsc::Sender<Job>,
}

impl Server {
    pub fn new(tools: Vec<Tool>, jobs: mpsc::Sender<Job>) -> Server {
        Server {
            tools: Arc::new(tools),
            jobs,
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentcron", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    /// A request the protocol could not read as one it knows. A `tools/call`
    /// whose params do not fit (`arguments` that is no object) lands here:
    /// invalid params, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "tools/call" {
            return Err(ErrorData::invalid_params(
                "tools/call needs params {name, arguments}, its arguments an object",
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let offered = self
            .get_tool(&request.name)
            .and(ToolName::parse(&request.name));
        let Some(tool) = offered else {
            return Err(ErrorData::invalid_params(
                format!("agentcron mcp offers no tool '{}'", request.name),
                None,
            ));
        };
        let client = context
            .client_info()
            .map(|info| info.name)
            .unwrap_or_default();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let call = Call {
            tool,
            arguments: request.arguments.unwrap_or_default(),
            client: client_name(&client),
        };
        let gone = || ErrorData::internal_error("the agentcron store thread has stopped", None);
        self.jobs.send(Job { call, reply }).map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())?.into())
    }
}

/// The client's name as it goes into `drafted_by` (`agent:<name>`): at most
/// 64 of `[A-Za-z0-9._-]`, anything else a `-`; `unknown` when empty.
pub fn client_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if clean.is_empty() {
        "unknown".into()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::client_name;

    #[test]
    fn a_client_name_is_cleaned_for_drafted_by() {
        assert_eq!(client_name("claude-code"), "claude-code");
        assert_eq!(client_name("My Client\n"), "My-Client-");
        assert_eq!(client_name(""), "unknown");
        assert_eq!(client_name(&"x".repeat(100)).len(), 64);
    }
}
