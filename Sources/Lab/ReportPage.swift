import Foundation

/// `report.html`: one self-contained page (inline SVG and CSS, no script) with the verdict, the
/// numbers, deliveries over time per node with the fault windows shaded, and the latency
/// distribution.
enum ReportPage {
    static func html(_ report: LabReport) -> String {
        let verdict = report.passed ? "<span class=pass>PASS</span>" : "<span class=fail>FAIL</span>"
        let numbers: [(String, String)] = [
            ("converged", report.converged ? "yes" : "no"),
            ("convergence", report.convergenceSeconds.map { String(format: "%.2f s", $0) } ?? "never"),
            ("acknowledged writes", "\(report.acknowledgedWrites)"),
            ("lost writes", "\(report.lostWrites)"),
            ("forked chains", "\(report.forks ?? 0)"),
            ("refused writes", "\(report.refusedWrites)"),
            ("writes skipped (cluster behind --rate)", "\(report.skippedWrites)"),
            ("latency p50 / p95 / p99", [report.latencyMs.p50, report.latencyMs.p95, report.latencyMs.p99].map(milliseconds).joined(separator: " / ")),
            ("ops/s (writes)", String(format: "%.1f", report.opsPerSecond)),
            ("deliveries/s", String(format: "%.1f", report.deliveriesPerSecond)),
            ("wire bytes per op delivered", String(format: "%.0f", report.wireBytesPerOp)),
            ("… by message type", report.wireBreakdown ?? "—"),
            ("copies of each op received", String(format: "%.2f", report.copiesPerOp ?? 0)),
            ("peak RSS (max node)", mebibytes(report.nodes.map(\.peakRssBytes).max() ?? 0)),
            ("CPU seconds (all nodes)", String(format: "%.1f", report.nodes.map(\.cpuSeconds).reduce(0, +))),
        ]
        var page = """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>parley lab: \(report.configuration.nodes) nodes, seed \(report.configuration.seed)</title>
            <style>
            body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
            table{border-collapse:collapse;margin:1em 0}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left}
            .pass{color:#fff;background:#2a7;padding:2px 8px}.fail{color:#fff;background:#c33;padding:2px 8px}
            code{background:#f4f4f4;padding:1px 4px}svg{background:#fcfcfc;border:1px solid #ddd}
            </style></head><body>
            <h1>parley lab \(verdict)</h1>
            <p><code>\(escape(report.configuration.command))</code></p>
            <p>\(report.configuration.nodes) nodes, \(Fault.format(report.configuration.durationSeconds)) s at \(Fault.format(report.configuration.rate)) writes/s, seed \(report.configuration.seed), \(report.configuration.rooms) rooms, \(report.configuration.conversations) conversations\((report.configuration.devices ?? 0) > 0 ? ", \(report.configuration.devices ?? 0) paired devices" : "")\(report.configuration.netns ? ", network namespaces" : ", loopback"). Faults: <code>\(escape(report.configuration.faults.isEmpty ? "none" : report.configuration.faults))</code></p>
            <table>
            """
        for (name, value) in numbers { page += "<tr><th>\(name)</th><td>\(escape(value))</td></tr>\n" }
        page += "</table>\n<h2>Ops delivered per second, per node</h2>\n" + timeline(report)
        page += "\n<h2>Delivery latency (write to applied on another node)</h2>\n" + latencyChart(report)
        page += "\n<h2>Faults</h2>\n<table><tr><th>fault</th><th>from</th><th>to</th><th>groups</th></tr>\n"
        for fault in report.faults {
            let end = fault.endSeconds.map { String(format: "%.1f s", $0) } ?? "end"
            let groups = fault.groups.map { $0.map { "{" + $0.map(String.init).joined(separator: ",") + "}" }.joined(separator: " ") } ?? ""
            page +=
                "<tr><td><code>\(escape(fault.spec))</code></td><td>\(String(format: "%.1f s", fault.startSeconds))</td><td>\(end)</td><td>\(groups)</td></tr>\n"
        }
        page +=
            "</table>\n<h2>Nodes</h2>\n<table><tr><th>node</th><th>id</th><th>peak RSS</th><th>CPU</th><th>starts</th><th>clock skew</th><th>writes</th></tr>\n"
        for node in report.nodes {
            page +=
                "<tr><td>\(node.name)</td><td><code>\(node.id.prefix(12))</code></td><td>\(mebibytes(node.peakRssBytes))</td><td>\(String(format: "%.1f s", node.cpuSeconds))</td><td>\(node.starts)</td><td>\(node.clockSkewMs / 1000) s</td><td>\(node.writesAcknowledged)</td></tr>\n"
        }
        page += "</table>\n"
        if !report.lostSample.isEmpty {
            page +=
                "<h2>Lost writes (first \(report.lostSample.count) of \(report.lostWrites))</h2>\n<table><tr><th>op</th><th>kind</th><th>by</th><th>missing on</th></tr>\n"
            for lost in report.lostSample {
                page +=
                    "<tr><td><code>\(lost.id.prefix(12))</code></td><td>\(lost.kind)</td><td>node \(lost.writtenBy)</td><td>\(lost.missingOn.map(String.init).joined(separator: ", "))</td></tr>\n"
            }
            page += "</table>\n"
        }
        if !report.divergedPartitions.isEmpty {
            page += "<p>Partitions that still differ: " + report.divergedPartitions.map { "<code>\($0.prefix(12))</code>" }.joined(separator: " ") + "</p>\n"
        }
        return page + "</body></html>\n"
    }

    static let faultColors = ["kill": "#e33", "pause": "#f90", "split": "#39f", "loss": "#a4d", "skew": "#2a7", "broken": "#555"]

    /// Deliveries per second per node (one line each), fault windows shaded behind.
    static func timeline(_ report: LabReport) -> String {
        let (width, height, left, bottom) = (1000.0, 320.0, 50.0, 30.0)
        let seconds = max(1, report.deliveredPerSecond.map(\.count).max() ?? 1)
        let peak = max(1, report.deliveredPerSecond.flatMap { $0 }.max() ?? 1)
        let plotWidth = width - left - 10, plotHeight = height - bottom - 10
        func x(_ second: Double) -> Double { left + plotWidth * second / Double(seconds) }
        func y(_ count: Double) -> Double { 10 + plotHeight * (1 - count / Double(peak)) }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\">\n"
        for fault in report.faults {
            let color = faultColors[fault.kind] ?? "#888"
            let end = fault.endSeconds ?? Double(seconds)
            let label = escape(fault.kind + (fault.node.map { " n\($0)" } ?? ""))
            if fault.kind == "skew" || fault.kind == "broken" {
                svg += line(x(fault.startSeconds), 10, x(fault.startSeconds), 10 + plotHeight, color, dash: true)
            } else {
                svg +=
                    "<rect x=\"\(f(x(fault.startSeconds)))\" y=\"10\" width=\"\(f(max(1, x(end) - x(fault.startSeconds))))\" height=\"\(f(plotHeight))\" fill=\"\(color)\" opacity=\"0.15\"/>\n"
            }
            svg += "<text x=\"\(f(x(fault.startSeconds) + 3))\" y=\"24\" font-size=\"11\" fill=\"\(color)\">\(label)</text>\n"
        }
        svg += line(left, 10 + plotHeight, left + plotWidth, 10 + plotHeight, "#444") + line(left, 10, left, 10 + plotHeight, "#444")
        for tick in ticks(upTo: Double(seconds)) {
            svg += "<text x=\"\(f(x(tick)))\" y=\"\(f(height - 12))\" font-size=\"11\" text-anchor=\"middle\">\(Int(tick)) s</text>\n"
        }
        for tick in ticks(upTo: Double(peak)) {
            svg += "<text x=\"\(f(left - 5))\" y=\"\(f(y(tick) + 4))\" font-size=\"11\" text-anchor=\"end\">\(Int(tick))</text>\n"
        }
        let count = report.deliveredPerSecond.count
        for (node, series) in report.deliveredPerSecond.enumerated() {
            let points = series.enumerated().map { "\(f(x(Double($0.offset) + 0.5))),\(f(y(Double($0.element))))" }.joined(separator: " ")
            let hue = count > 0 ? 360 * node / count : 0
            svg +=
                "<polyline fill=\"none\" stroke=\"hsl(\(hue),65%,45%)\" stroke-width=\"1.2\" opacity=\"0.8\" points=\"\(points)\"><title>node \(node)</title></polyline>\n"
        }
        return svg + "</svg>"
    }

    /// The latency histogram on a logarithmic axis, with p50, p95 and p99 marked.
    static func latencyChart(_ report: LabReport) -> String {
        let (width, height, left, bottom) = (1000.0, 260.0, 50.0, 30.0)
        let bounds = report.latencyHistogram.boundsMs, counts = report.latencyHistogram.counts
        guard !bounds.isEmpty, counts.count == bounds.count + 1 else { return "<p>no latencies</p>" }
        let low = log10(bounds[0] / 2), high = log10(bounds[bounds.count - 1] * 2)
        let plotWidth = width - left - 10, plotHeight = height - bottom - 10
        let peak = Double(max(1, counts.max() ?? 1))
        func x(_ millis: Double) -> Double { left + plotWidth * (log10(max(millis, bounds[0] / 2)) - low) / (high - low) }
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\">\n"
        for (index, count) in counts.enumerated() where count > 0 {
            let from = index == 0 ? bounds[0] / 2 : bounds[index - 1]
            let to = index < bounds.count ? bounds[index] : bounds[bounds.count - 1] * 2
            let barHeight = plotHeight * Double(count) / peak
            svg +=
                "<rect x=\"\(f(x(from) + 1))\" y=\"\(f(10 + plotHeight - barHeight))\" width=\"\(f(max(1, x(to) - x(from) - 2)))\" height=\"\(f(barHeight))\" fill=\"#58a\"><title>\(Int(from))–\(Int(to)) ms: \(count)</title></rect>\n"
        }
        svg += line(left, 10 + plotHeight, left + plotWidth, 10 + plotHeight, "#444")
        for bound in bounds where [1, 10, 100, 1_000, 10_000, 100_000].contains(bound) {
            svg +=
                "<text x=\"\(f(x(bound)))\" y=\"\(f(height - 12))\" font-size=\"11\" text-anchor=\"middle\">\(bound >= 1000 ? "\(Int(bound / 1000)) s" : "\(Int(bound)) ms")</text>\n"
        }
        for (name, value) in [("p50", report.latencyMs.p50), ("p95", report.latencyMs.p95), ("p99", report.latencyMs.p99)] {
            guard let value else { continue }
            svg += line(x(value), 10, x(value), 10 + plotHeight, "#c33", dash: true)
            svg +=
                "<text x=\"\(f(x(value) + 3))\" y=\"\(name == "p50" ? 22 : name == "p95" ? 36 : 50)\" font-size=\"11\" fill=\"#c33\">\(name) \(milliseconds(value))</text>\n"
        }
        return svg + "</svg>"
    }

    private static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, _ color: String, dash: Bool = false) -> String {
        "<line x1=\"\(f(x1))\" y1=\"\(f(y1))\" x2=\"\(f(x2))\" y2=\"\(f(y2))\" stroke=\"\(color)\"\(dash ? " stroke-dasharray=\"4 3\"" : "")/>\n"
    }

    /// About five round ticks from 0 to `limit`.
    static func ticks(upTo limit: Double) -> [Double] {
        let raw = max(1, limit / 5)
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2.0, 5.0, 10.0].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        return stride(from: 0, through: limit, by: step).map { $0 }
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }

    static func milliseconds(_ value: Double?) -> String {
        guard let value else { return "–" }
        return value >= 1000 ? String(format: "%.2f s", value / 1000) : String(format: "%.0f ms", value)
    }

    static func mebibytes(_ bytes: UInt64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }
}
