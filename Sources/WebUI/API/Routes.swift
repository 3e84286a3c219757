import Presentation

extension Route {
    /// Every endpoint of the API, in the order the OpenAPI document lists them.
    static let all: [Route] = [
        Route(
            method: "GET", path: "/api/openapi.json", summary: "This document (needs no token)", success: 200, response: Schema.document,
            needsToken: false, handle: { _ in .response(.json(OpenAPI.document.text)) }),
        Route(
            method: "GET", path: "/api/events", summary: "Server-Sent Events: hello, changed, partitions, typing, presence, peers",
            success: 200, contentTypes: ["text/event-stream"], handle: API.events),
        Route(
            method: "GET", path: "/api/me", summary: "Who this node is, and where its web UI listens", success: 200, response: Schema.me,
            supplies: ["user": "/id"], handle: API.me),

        Route(method: "GET", path: "/api/rooms", summary: "The joined rooms with unread counts", success: 200, response: .list(Schema.room), handle: API.rooms),
        Route(
            method: "POST", path: "/api/rooms", summary: "Join a room; with a passphrase (8 to 1,024 bytes), the private room it protects",
            requestBody: RequestSchema.join, success: 201, response: Schema.room, supplies: ["partition": "/partition", "room": "/name"],
            handle: API.join),
        Route(method: "DELETE", path: "/api/rooms/{room}", summary: "Leave a room", success: 204, handle: API.leave),
        Route(
            method: "GET", path: "/api/directory",
            summary: "The room directory: public rooms you and your linked peers joined, with topic and people (peers' word)", success: 200,
            response: .list(Schema.directoryRoom), handle: API.directory),

        Route(
            method: "GET", path: "/api/conversations", summary: "Your conversations with members and unread counts", success: 200,
            response: .list(Schema.conversation), handle: API.conversations),
        Route(
            method: "POST", path: "/api/conversations", summary: "Start a private conversation",
            requestBody: RequestSchema.createConversation, success: 201, response: Schema.conversation, errors: [422],
            supplies: ["conversation": "/id", "partition": "/id"], handle: API.createConversation),
        Route(
            method: "PATCH", path: "/api/conversations/{conversation}", summary: "Rename a conversation",
            requestBody: RequestSchema.renameConversation, success: 200, response: Schema.conversation, errors: [409],
            handle: API.renameConversation),
        Route(
            method: "POST", path: "/api/conversations/{conversation}/members", summary: "Add a member",
            requestBody: RequestSchema.addMember, success: 200, response: Schema.conversation, errors: [409, 422], handle: API.addMember),
        Route(
            method: "DELETE", path: "/api/conversations/{conversation}/members/{user}", summary: "Remove a member (the creator only)",
            success: 200, response: Schema.conversation, errors: [409], handle: API.removeMember),
        Route(
            method: "POST", path: "/api/conversations/{conversation}/leave", summary: "Leave a conversation", success: 204,
            errors: [409], handle: API.leaveConversation),

        Route(
            method: "GET", path: "/api/partitions/{partition}/messages", summary: "A room's or conversation's messages, oldest first",
            query: [
                QueryParameter(
                    name: "limit", description: "the newest N, or with after the first N after it (default \(API.historyPage))",
                    schema: RequestSchema.integer("how many", minimum: 1, maximum: API.historyPage)),
                QueryParameter(
                    name: "before", description: "only the messages before this one (the next page back: the oldest id of the last answer)",
                    schema: RequestSchema.id("a message id")),
                QueryParameter(
                    name: "after",
                    description:
                        "only the messages after this one, the oldest first (the next page forward: the newest id of the last answer); not with before",
                    schema: RequestSchema.id("a message id")),
            ], success: 200, response: .list(Schema.message), handle: API.history),
        Route(
            method: "POST", path: "/api/partitions/{partition}/messages", summary: "Post a message (attachments in base64)",
            requestBody: RequestSchema.post, success: 201, response: Schema.message, errors: [409], bodyLimit: Route.uploadBody,
            supplies: ["message": "/id"], handle: API.send),
        Route(
            method: "POST", path: "/api/partitions/{partition}/read", summary: "Mark everything read", success: 204,
            handle: API.markRead),
        Route(
            method: "PUT", path: "/api/partitions/{partition}/mute", summary: "Mute (no notification) or unmute a room or conversation",
            requestBody: RequestSchema.mute, success: 204, handle: API.mute),
        Route(
            method: "POST", path: "/api/partitions/{partition}/typing", summary: "Say you are typing", success: 204,
            handle: API.typing),
        Route(
            method: "GET", path: "/api/partitions/{partition}/tasks", summary: "The task board", success: 200, response: .list(Schema.task),
            handle: API.tasks),
        Route(
            method: "POST", path: "/api/partitions/{partition}/tasks", summary: "Add a task",
            requestBody: RequestSchema.addTask, success: 201, response: Schema.task, errors: [409, 422], supplies: ["task": "/id"],
            handle: API.addTask),

        Route(
            method: "PATCH", path: "/api/messages/{message}", summary: "Edit your message",
            requestBody: RequestSchema.edit, success: 200, response: Schema.message, errors: [409], handle: API.edit),
        Route(
            method: "DELETE", path: "/api/messages/{message}", summary: "Delete your message", success: 204, errors: [409],
            handle: API.delete),
        Route(
            method: "POST", path: "/api/messages/{message}/reactions", summary: "React (on: false takes it back)",
            requestBody: RequestSchema.react, success: 200, response: Schema.message, errors: [409], handle: API.react),
        Route(
            method: "GET", path: "/api/messages/{message}/attachments/{index}", summary: "An attachment's content (index from 1)",
            success: 200, contentTypes: Route.fileTypes, errors: [409], handle: API.attachment),

        Route(
            method: "PATCH", path: "/api/tasks/{task}", summary: "Change a task's status, title or owner (owner null clears it)",
            requestBody: RequestSchema.updateTask, success: 200, response: Schema.task, errors: [409, 422], handle: API.updateTask),
        Route(method: "DELETE", path: "/api/tasks/{task}", summary: "Delete a task", success: 204, errors: [409], handle: API.deleteTask),

        Route(
            method: "GET", path: "/api/people", summary: "The directory with presence",
            query: [QueryParameter(name: "search", description: "nick, name, status or id prefix", schema: RequestSchema.string("what to look for"))],
            success: 200, response: .list(Schema.person), handle: API.people),
        Route(
            method: "GET", path: "/api/people/{user}/avatar", summary: "Someone's avatar picture", success: 200, contentTypes: Route.fileTypes,
            handle: API.avatar),
        Route(method: "GET", path: "/api/profile", summary: "Your profile", success: 200, response: Schema.profile, handle: API.profile),
        Route(
            method: "PATCH", path: "/api/profile", summary: "Set your nickname, display name, status or presence",
            requestBody: RequestSchema.updateProfile, success: 200, response: Schema.profile, handle: API.updateProfile),
        Route(
            method: "PUT", path: "/api/profile/avatar", summary: "Upload your avatar (an image, base64)", requestBody: RequestSchema.avatar, success: 200,
            response: Schema.profile, bodyLimit: Route.uploadBody, handle: API.uploadAvatar),

        Route(
            method: "GET", path: "/api/devices", summary: "Your devices: the first one (your identity key) and each one paired since", success: 200,
            response: .list(Schema.device), handle: API.devices),
        Route(
            method: "POST", path: "/api/devices/{device}/revoke",
            summary: "Revoke one of your devices (a lost laptop): its later writes are refused everywhere, and your conversations rotate their keys",
            success: 200, response: Schema.device, errors: [404, 409], handle: API.revokeDevice),
        Route(
            method: "POST", path: "/api/devices/pair",
            summary: "Pair a new device of yours: a code (and its QR code) for `parley init --pair` on it; this node waits for it",
            requestBody: RequestSchema.pair, success: 201, response: Schema.pairing, errors: [409], handle: API.startPairing),
        Route(
            method: "GET", path: "/api/devices/pair", summary: "The pairing started here last, and where it stands", success: 200,
            response: Schema.pairing, errors: [404], handle: API.pairing),
        Route(
            method: "DELETE", path: "/api/devices/pair", summary: "End the waiting pairing: its code is no good from then on", success: 204,
            errors: [404], handle: API.cancelPairing),

        Route(method: "GET", path: "/api/peers", summary: "The node's peer table", success: 200, response: .list(Schema.peer), handle: API.peers),
        Route(method: "GET", path: "/api/status", summary: "The node at a glance", success: 200, response: Schema.status, handle: API.status),
        Route(method: "GET", path: "/api/digest", summary: "Each partition's digest", success: 200, response: .list(Schema.digest), handle: API.digest),
        Route(
            method: "GET", path: "/api/doctor", summary: "What the node sees on the network (`parley doctor`)", success: 200, response: Schema.doctor,
            handle: API.doctor),
        Route(
            method: "GET", path: "/api/export", summary: "Signed ops as a `parley export` archive: everything, or one room or conversation",
            query: [
                QueryParameter(
                    name: "partition", description: "a room name or a partition id; a room brings the directory along, a conversation its members' inboxes",
                    schema: Route.pathSchemas["partition"]!)
            ], success: 200, contentTypes: ["application/octet-stream"], errors: [404], handle: API.export),
        Route(
            method: "POST", path: "/api/import", summary: "Apply a `parley export` archive (base64, at most 8 MiB), verified like ops from a peer",
            requestBody: RequestSchema.importArchive, success: 200, response: Schema.importSummary, errors: [422],
            bodyLimit: Route.uploadBody, handle: API.importArchive),
        Route(
            method: "POST", path: "/api/wipe",
            summary: "Panic wipe: destroy the keys (the store cannot be read from then on), remove the data and stop the node",
            requestBody: RequestSchema.wipe, success: 200, response: Schema.object(["wiped": .boolean]), handle: API.wipe),
    ]
}
