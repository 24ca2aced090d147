"""Live plant data coming in: OPC UA and MQTT sources, batched writing, alarms raised from telemetry, the service."""
