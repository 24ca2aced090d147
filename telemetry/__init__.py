"""Live plant data coming in: the OPC UA and MQTT sources, batched writing, and the service that runs them."""
